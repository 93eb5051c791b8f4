"""``nobg-metrics panoptic --bootstrap N --compare B``: image-level bootstrap intervals of PQ / SQ / RQ and a paired
test between two predictions of the same gt (docs/statistics.md "Instance, panoptic and video families").

Each image keeps its per-category sufficient statistics — TP, FP, FN counts and the IoU sum of its matches, the
numbers PQ sums — as one row of an :math:`(n, C \\cdot 4)` table (:data:`FIELDS` per category); a resample sums
the rows of its drawn images (a matrix product) and :func:`pq_values` recomputes PQ as the compute step does
(panopticapi's rules: a class with TP + FP + FN = 0 is left out of the means, a mean over no class is 0). No
image is matched again.

The argument flags are importable without numpy (the parser adds them).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.arguments import add_statistics_flags
from nobg_metrics.cli.core.errors import ConfigError

FIELDS = ("true_positives", "false_positives", "false_negatives", "iou_sum")
"""The per-category statistics of an image, in this order (the last one float64, the others counts)."""
GROUPS = ("All", "Things", "Stuff")
VALUES = ("pq", "sq", "rq")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The statistics flags (eval's ``--bootstrap`` / ``--seed`` / ``--alpha`` / ``--permutations``, the same
    checks)."""
    group = add_statistics_flags(
        parser, permutations=10000,
        permutations_help="swap vectors of the paired test (all 2^n when 2^n <= N: exact)",
        compare_metavar="PRED_JSON",
        compare_help="a second prediction JSON on the same gt: paired bootstrap of the differences and a paired "
                     "swap test")
    group.add_argument("--compare-folder", type=Path, default=None, metavar="PRED_FOLDER",
                       help="its PNG folder (default: the JSON's path without .json)")


def wanted(args: argparse.Namespace) -> bool:
    """Whether the run writes statistics."""
    return getattr(args, "bootstrap", None) is not None or getattr(args, "compare", None) is not None


def compare_folder(args: argparse.Namespace) -> Path | None:
    """``--compare``'s PNG folder (checked: an input error when it is missing; default: the JSON's path without
    ``.json``, as panopticapi's folders), or None without ``--compare``."""
    if getattr(args, "compare", None) is None:
        if getattr(args, "compare_folder", None) is not None:
            raise ConfigError("--compare-folder goes with --compare PRED_JSON")
        return None
    from nobg_metrics.io.panoptic import check_folder  # torch: not for the parser, which imports this module

    given: Path = args.compare
    folder: Path = args.compare_folder or (given.with_suffix("") if given.suffix == ".json" else given)
    check_folder(folder, "compared")
    return folder


def pq_values(sums: Any, isthing: Any, class_ids: list[int]) -> dict[str, Any]:
    """PQ / SQ / RQ of column sums :math:`(R, C \\cdot 4)` (:data:`FIELDS` per category) as panopticapi computes
    them: ``All/pq`` ... ``Stuff/rq`` :math:`(R,)`, and ``per_class/<id>/pq`` ... (NaN where the class has no
    TP + FP + FN in that resample).

    Example (one thing class with TP 2, FP 1, FN 1 and IoU sum 1.5):
        >>> import numpy as np
        >>> values = pq_values(np.array([[2.0, 1.0, 1.0, 1.5]]), np.array([True]), [7])
        >>> [float(values[k][0]) for k in ("All/pq", "All/sq", "All/rq", "Stuff/pq", "per_class/7/pq")]
        [0.5, 0.75, 0.6666666666666666, 0.0, 0.5]
    """
    import numpy as np  # not for the parser, which imports this module

    table = sums.reshape(sums.shape[0], -1, len(FIELDS))
    tp, fp, fn, iou = (table[..., k] for k in range(len(FIELDS)))
    present = (tp + fp + fn) > 0
    denominator = np.where(present, tp + 0.5 * fp + 0.5 * fn, 1.0)
    per_class = {"pq": np.where(present, iou / denominator, 0.0),
                 "sq": np.where(tp > 0, iou / np.maximum(tp, 1.0), 0.0),
                 "rq": np.where(present, tp / denominator, 0.0)}
    out = {}
    for group, member in zip(GROUPS, (present, present & isthing, present & ~isthing)):
        n = member.sum(axis=1)
        for name, values in per_class.items():
            total = np.where(member, values, 0.0).sum(axis=1)
            out[f"{group}/{name}"] = np.where(n > 0, total / np.maximum(n, 1), 0.0)
    for k, category in enumerate(class_ids):
        for name, values in per_class.items():
            out[f"per_class/{category}/{name}"] = np.where(present[:, k], values[:, k], np.nan)
    return out


def estimates(results: dict[str, Any], present: list[int]) -> dict[str, float]:
    """The full-data values of a result dict (panopticapi's layout), per class for the ``present`` classes."""
    values = {f"{group}/{name}": float(results[group][name]) for group in GROUPS for name in VALUES}
    for category in present:
        values.update({f"per_class/{category}/{name}": float(results["per_class"][category][name])
                       for name in VALUES})
    return values


def statistics(args: argparse.Namespace, tables: dict[str, Any], results: dict[str, dict[str, Any]],
               isthing: tuple[bool, ...], class_ids: tuple[int, ...]) -> dict[str, Any]:
    """The ``stats.json`` document: ``tables`` result label -> :math:`(n, C, 4)` per-image statistics,
    ``results`` label -> its result dict."""
    import numpy as np  # numpy: not for the parser, which imports this module

    from nobg_metrics.cli.outputs.summary_stats import family_statistics  # numpy, likewise

    flat = {label: np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1) for label, table in tables.items()}
    present_any = np.zeros(len(class_ids), dtype=bool)
    for table in tables.values():
        present_any |= np.asarray(table)[..., :3].sum(axis=(0, 2)) > 0
    present = [c for c, keep in zip(class_ids, present_any.tolist()) if keep]
    thing_mask, ids = np.array(isthing, dtype=bool), list(class_ids)
    keep = set(estimates(next(iter(results.values())), present))

    def summarise(sums: np.ndarray) -> dict[str, np.ndarray]:
        return {name: values for name, values in pq_values(sums, thing_mask, ids).items() if name in keep}

    resamples = args.bootstrap if args.bootstrap is not None else 1000
    return family_statistics(flat, summarise, {label: estimates(r, present) for label, r in results.items()},
                             unit="image", resamples=resamples, seed=args.seed, alpha=args.alpha,
                             permutations=args.permutations, family="panoptic")
