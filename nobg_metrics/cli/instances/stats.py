"""``nobg-metrics instances --bootstrap N --compare B``: image-level bootstrap intervals of every COCO summary value
and a paired swap test between two results files on the same gt (docs/statistics.md "Instance AP").

AP is not a function of per-image sums, so the resamples are evaluated by
:func:`~nobg_metrics.functional.instance.ap_resampling.weighted_summary` from the metric's kept matching statistics
(each drawn image's records weighted by its multiplicity; nothing matched again). The draws are ``eval``'s and the
panoptic command's (:func:`~nobg_metrics.cli.outputs.stats.resample_counts` of ``generator(seed, "instances",
"bootstrap")``, one index matrix shared by both results: a paired bootstrap; swap vectors of ``generator(seed,
"instances", "swap")``), and the document has :func:`~nobg_metrics.cli.outputs.summary_stats.family_statistics`'
layout. Units: every image of the annotation file, in id order.

The argument flags are importable without torch (the parser adds them).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from nobg_metrics.cli.core.arguments import add_statistics_flags

FAMILY = "instances"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The statistics flags (``eval``'s names and checks)."""
    add_statistics_flags(
        parser, permutations=1000,
        permutations_help="swap vectors of the paired test (all 2^n when 2^n <= N: exact; default 1000: each is "
                          "one AP evaluation)",
        compare_metavar="DT_JSON",
        compare_help="a second results file on the same gt: paired bootstrap of the differences and a paired swap "
                     "test over images")


def wanted(args: argparse.Namespace) -> bool:
    """Whether the run writes statistics."""
    return getattr(args, "bootstrap", None) is not None or getattr(args, "compare", None) is not None


def usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--errors`` / the statistics flags on this run (``None``: nothing)."""
    asked = getattr(args, "errors", None) is not None or wanted(args)
    if asked and getattr(args, "cityscapes", False):
        return "--errors and --bootstrap / --compare apply to COCO results files (not --cityscapes)"
    if asked and getattr(args, "lvis", False):
        return "--errors and --bootstrap / --compare follow the COCO protocol (not --lvis)"
    return None


def statistics(args: argparse.Namespace, kept: dict[str, Any], estimates: dict[str, dict[str, float]],
               images: int, options: Any) -> dict[str, Any]:
    """The ``stats.json`` document: ``kept`` result label -> its statistics (``resampling_records``' source
    dicts), ``estimates`` label -> value -> the command's exact value, ``images`` the units."""
    # numpy, torch, the resampler: loaded when statistics are asked for (the parser imports this module)
    import numpy as np
    import torch

    from nobg_metrics.cli.outputs.stats import generator, resample_counts
    from nobg_metrics.cli.outputs.summary_stats import decide_comparisons, finite_interval
    from nobg_metrics.functional.instance.ap_resampling import resampling_records, weighted_summary

    names = list(kept)
    prefix = f"{options.iou_type}/"
    resamples = args.bootstrap if args.bootstrap is not None else 1000
    common = {"alpha": args.alpha, "resamples": resamples, "seed": args.seed, "unit": "image", "units": images}

    def evaluate(records: Any, weights: np.ndarray) -> dict[str, np.ndarray]:
        values = weighted_summary(records, torch.from_numpy(weights), options)
        return {prefix + key: value.cpu().numpy() for key, value in values.items()}

    resampled: dict[str, dict[str, np.ndarray]] = {}
    if resamples > 0 and images > 0:
        single = {name: resampling_records([kept[name]], images) for name in names}
        parts: dict[str, list[dict[str, np.ndarray]]] = {name: [] for name in names}
        for counts in resample_counts(generator(args.seed, FAMILY, "bootstrap"), images, resamples):
            for name in names:  # the same draws for every result: a paired bootstrap
                parts[name].append(evaluate(single[name], counts))
        resampled = {name: {key: np.concatenate([p[key] for p in parts[name]]) for key in parts[name][0]}
                     for name in names}
    results: dict[str, Any] = {}
    for name in names:
        entries = {}
        for value, estimate in estimates[name].items():
            interval = None
            if name in resampled and math.isfinite(estimate):
                interval = finite_interval(_defined(resampled[name][value]), args.alpha)
            entries[value] = {"estimate": estimate, "low": None if interval is None else interval[0],
                              "high": None if interval is None else interval[1], **common}
        results[name] = entries
    comparisons = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pooled = resampling_records([kept[a], kept[b]], images)
            p, exact = _swap_test(pooled, estimates[a], estimates[b], images, args, evaluate)
            entries = {}
            for value in estimates[a]:
                difference = estimates[a][value] - estimates[b][value]
                interval = None
                if a in resampled:
                    interval = finite_interval(_defined(resampled[a][value]) - _defined(resampled[b][value]),
                                               args.alpha)
                entries[value] = {"difference": difference, "low": None if interval is None else interval[0],
                                  "high": None if interval is None else interval[1], "p_value": p[value],
                                  "exact": exact, **common}
            comparisons.append({"a": a, "b": b, "values": entries})
    # every AP / AR value: higher is better
    decide_comparisons(comparisons, {}, args.alpha)
    return {"family": FAMILY, "unit": "image", "units": images, "seed": args.seed, "alpha": args.alpha,
            "bootstrap": {"resamples": resamples, "confidence": 1 - args.alpha, "interval": "percentile",
                          "statistic": "COCO AP / AR recomputed from the kept matching statistics of the drawn "
                                       "images (each weighted by its multiplicity; no image matched again)"},
            "test": {"name": "paired swap permutation test (each image's two results exchanged or not)",
                     "alternative": "two-sided", "permutations": args.permutations, "correction": "holm over pairs"},
            "results": results, "comparisons": comparisons}


def _defined(values: Any) -> Any:
    """-1 (no valid cell in that resample) as NaN: left out of the percentiles."""
    # numpy, torch, the resampler: loaded when statistics are asked for (the parser imports this module)
    import numpy as np

    return np.where(values == -1.0, np.nan, values)


def _swap_test(pooled: Any, a: dict[str, float], b: dict[str, float], images: int, args: argparse.Namespace,
               evaluate: Any) -> tuple[dict[str, float | None], bool]:
    """Two-sided paired swap test of every value: a swap vector gives image i to the other side when 1; the
    statistic is ``|value(A side) - value(B side)|`` against the observed ``|a - b|``."""
    # numpy, torch, the resampler: loaded when statistics are asked for (the parser imports this module)
    import numpy as np

    from nobg_metrics.cli.outputs.stats import generator, swap_matrices
    from nobg_metrics.cli.outputs.summary_stats import TIE_RTOL

    reached = dict.fromkeys(a, 0)
    batches, exact = swap_matrices(images, args.permutations, generator(args.seed, FAMILY, "swap"))
    for swaps in batches:
        side_a = evaluate(pooled, np.concatenate([1.0 - swaps, swaps], axis=1))
        side_b = evaluate(pooled, np.concatenate([swaps, 1.0 - swaps], axis=1))
        for name in a:
            d = a[name] - b[name]
            threshold = abs(d) - TIE_RTOL * max(1.0, abs(d))
            reached[name] += int(np.count_nonzero(np.abs(side_a[name] - side_b[name]) >= threshold))
    total = float(1 << images) if exact else float(args.permutations)
    p: dict[str, float | None] = {}
    for name in a:
        if not math.isfinite(a[name] - b[name]) or a[name] == -1.0 or b[name] == -1.0:
            p[name] = None
        else:
            p[name] = reached[name] / total if exact else (1 + reached[name]) / (1 + total)
    return p, exact
