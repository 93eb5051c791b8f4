"""Bootstrap intervals and paired tests of summary values computed from per-unit sums (panoptic PQ, DAVIS J & F).

A family's dataset values are functions of column sums over its units (images for PQ: per-category TP, FP, FN and
IoU sums; sequences for DAVIS: per-object means summed and the object count). A result is a table
:math:`(n, K)` of per-unit sums; ``summarise`` maps sums :math:`(R, K)` to ``name -> (R,)`` values exactly as the
family's compute step does. docs/statistics.md "Instance, panoptic and video families" gives the method.

- intervals: percentile bootstrap over units; one index matrix (:func:`~nobg_metrics.cli.outputs.stats.
  resample_counts`, drawn as ``eval`` draws it) shared by every result, so a pair's difference is resampled from
  the same draws (paired bootstrap);
- tests: the paired swap test — each unit's two results swapped or not, every swap vector equally likely under
  exchangeability; for a per-unit mean it is exactly ``eval``'s sign-flip test. Holm over the pairs of one value.

numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nobg_metrics.cli.outputs.stats import (
    bootstrap_sums,
    generator,
    holm,
    percentile_interval,
    swap_matrices,
)

Summarise = Callable[[np.ndarray], dict[str, np.ndarray]]
"""Column sums :math:`(R, K)` -> ``name -> (R,)`` values (NaN: undefined in that resample)."""

TIE_RTOL = 1e-12
"""A swapped difference reaches the observed one when ``|d*| >= |d| - TIE_RTOL * max(1, |d|)`` (rounding)."""


def finite_interval(values: np.ndarray, alpha: float) -> tuple[float, float] | None:
    """Percentile interval over the finite resampled values (None when none is finite).

    Example:
        >>> [round(q, 12) for q in finite_interval(np.array([0.0, np.nan, 1.0, 2.0, 1.0]), 0.05)]
        [0.075, 1.925]
    """
    kept = values[np.isfinite(values)]
    return None if kept.size == 0 else percentile_interval(kept, alpha)


def swap_test(a: np.ndarray, b: np.ndarray, summarise: Summarise, permutations: int,
              rng: np.random.Generator) -> tuple[dict[str, float | None], bool]:
    """Two-sided paired swap test of every summary value of two results on the same units (``a``, ``b``:
    :math:`(n, K)`); returns ``(name -> p, exact)``.

    Statistic :math:`|f(\\sum_i a_i) - f(\\sum_i b_i)|`; a swap vector :math:`s \\in \\{0, 1\\}^n` exchanges unit
    i's rows when :math:`s_i = 1`: sums :math:`A + s (b - a)` and :math:`B - s (b - a)`. Exact over all
    :math:`2^n` vectors (``p = #reached / 2^n``) or Monte Carlo (``p = (1 + #reached) / (1 + P)``); a NaN
    observed difference gives ``None``.

    Example (one unit better on each of 4 units: only the identity and the full swap reach it):
        >>> a, b = np.array([[1.0], [2.0], [3.0], [4.0]]), np.zeros((4, 1))
        >>> swap_test(a, b, lambda sums: {"total": sums[:, 0]}, 100, generator(0))
        ({'total': 0.125}, True)
    """
    total_a, total_b = a.sum(axis=0), b.sum(axis=0)
    observed = {name: va[0] - summarise(total_b[None])[name][0]
                for name, va in summarise(total_a[None]).items()}
    reached = dict.fromkeys(observed, 0)
    delta = b - a
    batches, exact = swap_matrices(a.shape[0], permutations, rng)
    for swaps in batches:
        moved = swaps @ delta
        values_a, values_b = summarise(total_a + moved), summarise(total_b - moved)
        for name, d in observed.items():
            threshold = abs(d) - TIE_RTOL * max(1.0, abs(d))
            reached[name] += int(np.count_nonzero(np.abs(values_a[name] - values_b[name]) >= threshold))
    total = float(1 << a.shape[0]) if exact else float(permutations)
    p: dict[str, float | None] = {}
    for name, d in observed.items():
        if not math.isfinite(d):
            p[name] = None
        else:
            p[name] = reached[name] / total if exact else (1 + reached[name]) / (1 + total)
    return p, exact


def _clean(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def family_statistics(tables: dict[str, np.ndarray], summarise: Summarise, estimates: dict[str, dict[str, float]],
                      *, unit: str, resamples: int, seed: int, alpha: float, permutations: int,
                      higher: dict[str, bool] | None = None, family: str = "") -> dict[str, Any]:
    """The ``stats.json`` document of one family (docs/statistics.md "Instance, panoptic and video families").

    Args:
        tables: result name -> :math:`(n, K)` per-unit sums, the same units in the same order for every result.
        summarise: sums -> values (:data:`Summarise`), the family's compute step.
        estimates: result name -> value name -> the full-data value (as the command reports it).
        unit: ``"image"`` or ``"sequence"``.
        resamples: bootstrap resamples (0: no intervals).
        seed: seed of every draw (bootstrap: ``generator(seed, family, "bootstrap")``; tests:
            ``generator(seed, family, "swap")``, the same swap vectors for every pair).
        alpha: intervals are ``1 - alpha``; a pair is significant when its Holm p is at most ``alpha``.
        permutations: swap vectors per paired test (all :math:`2^n` when :math:`2^n \\le` permutations).
        higher: value name -> whether higher is better (names ``better``; default: higher for all).
        family: the family's name (``"panoptic"``, ``"davis"``), a key of the draws.
    """
    names = list(tables)
    n = next(iter(tables.values())).shape[0]
    common = {"alpha": alpha, "resamples": resamples, "seed": seed, "unit": unit, "units": n}
    resampled: dict[str, dict[str, np.ndarray]] = {}
    if resamples > 0 and n > 0:
        stacked = np.concatenate([tables[name] for name in names], axis=1)
        sums = bootstrap_sums(stacked, generator(seed, family, "bootstrap"), resamples)
        width = stacked.shape[1] // len(names)
        resampled = {name: summarise(sums[:, k * width:(k + 1) * width]) for k, name in enumerate(names)}
    results: dict[str, Any] = {}
    for name in names:
        values = {}
        for value, estimate in estimates[name].items():
            interval = None
            if name in resampled and math.isfinite(estimate):
                interval = finite_interval(resampled[name][value], alpha)
            values[value] = {"estimate": _clean(estimate), "low": None if interval is None else interval[0],
                             "high": None if interval is None else interval[1], **common}
        results[name] = values
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    comparisons = []
    for a, b in pairs:
        p, exact = swap_test(tables[a], tables[b], summarise, permutations, generator(seed, family, "swap"))
        values = {}
        for value in estimates[a]:
            difference = estimates[a][value] - estimates[b][value]
            interval = None
            if a in resampled and math.isfinite(difference):
                interval = finite_interval(resampled[a][value] - resampled[b][value], alpha)
            values[value] = {"difference": _clean(difference), "low": None if interval is None else interval[0],
                             "high": None if interval is None else interval[1], "p_value": p.get(value),
                             "exact": exact, **common}
        comparisons.append({"a": a, "b": b, "values": values})
    decide_comparisons(comparisons, higher or {}, alpha)
    return {"family": family, "unit": unit, "units": n, "seed": seed, "alpha": alpha,
            "bootstrap": {"resamples": resamples, "confidence": 1 - alpha, "interval": "percentile",
                          "statistic": f"the dataset value recomputed from resampled per-{unit} sums"},
            "test": {"name": f"paired swap permutation test (each {unit}'s two results exchanged or not)",
                     "alternative": "two-sided", "permutations": permutations, "correction": "holm over pairs"},
            "results": results, "comparisons": comparisons}


def decide_comparisons(comparisons: list[dict[str, Any]], higher: dict[str, bool], alpha: float) -> None:
    """Holm over the pairs of each value; ``significant`` and ``better`` (the result with the better value;
    ``higher`` says per value whether higher is better, default yes)."""
    if not comparisons:
        return
    for value in comparisons[0]["values"]:
        entries = [c["values"][value] for c in comparisons]
        tested = [e for e in entries if e["p_value"] is not None]
        for entry, adjusted in zip(tested, holm([e["p_value"] for e in tested])):
            entry["p_holm"] = adjusted
        for comparison, entry in zip(comparisons, entries):
            entry.setdefault("p_holm", None)
            significant = entry["p_holm"] is not None and entry["p_holm"] <= alpha and entry["difference"] != 0
            entry["significant"] = significant
            up = higher.get(value, True)
            entry["better"] = None if not significant else (
                comparison["a"] if (entry["difference"] > 0) == up else comparison["b"])


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(p: float | None) -> str:
    return "-" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"


def markdown(stats: dict[str, Any], digits: int = 4, title: str = "Statistics") -> str:
    """``stats.md``: per result a table of the values with their intervals, then each comparison."""
    level = f"{100 * stats['bootstrap']['confidence']:g} %"
    lines = [f"# {title}", "",
             f"Percentile bootstrap over {stats['units']} {stats['unit']}s ({stats['bootstrap']['resamples']} "
             f"resamples, {level} intervals, seed {stats['seed']}); paired swap permutation test "
             f"({stats['test']['permutations']} swap vectors; all when 2^n is fewer), Holm over pairs.", ""]
    for name, values in stats["results"].items():
        lines += [f"## {name}", "", "| value | estimate | interval |", "|---|---|---|"]
        for value, entry in values.items():
            interval = "-" if entry["low"] is None else \
                f"[{_number(entry['low'], digits)}, {_number(entry['high'], digits)}]"
            lines.append(f"| {value} | {_number(entry['estimate'], digits)} | {interval} |")
        lines.append("")
    for comparison in stats["comparisons"]:
        lines += [f"## {comparison['a']} − {comparison['b']}", "",
                  "| value | difference | interval | p | Holm p | better |", "|---|---|---|---|---|---|"]
        for value, entry in comparison["values"].items():
            interval = "-" if entry["low"] is None else \
                f"[{_number(entry['low'], digits)}, {_number(entry['high'], digits)}]"
            lines.append(f"| {value} | {_number(entry['difference'], digits)} | {interval} | {_p(entry['p_value'])} "
                         f"| {_p(entry['p_holm'])} | {entry['better'] or '-'} |")
        lines.append("")
    return "\n".join(lines)
