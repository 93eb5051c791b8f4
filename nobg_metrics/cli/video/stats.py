"""``eval --preset davis`` statistics: sequence-level bootstrap intervals of the seven global numbers and a paired
test between every two methods (docs/statistics.md "Instance, panoptic and video families").

The global numbers are means over objects; the objects of a sequence share its frames, so the **sequence** is
the unit. Each sequence keeps one row: the sums over its objects of ``(J-Mean, J-Recall, J-Decay, F-Mean,
F-Recall, F-Decay)`` and its object count; a resample sums the rows of its drawn sequences and divides
(:func:`davis_values`), which is the mean over the resample's objects, as ``global_row`` computes it. A NaN decay
(davis2017-evaluation's uint8 bins from 256 frames on) makes the value NaN: no interval.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from nobg_metrics.cli.outputs.summary_stats import family_statistics
from nobg_metrics.cli.video.tables import GLOBAL_COLUMNS

LOWER_IS_BETTER = ("J-Decay", "F-Decay")


def sequence_table(per_object: dict[str, tuple[float, ...]], sequences: list[str]) -> np.ndarray:
    """:math:`(S, 7)`: per sequence (in ``sequences``' order) the sums of its objects' six statistics and the
    object count (objects are keyed ``<sequence>_<id>``).

    Example:
        >>> rows = {"a_1": (1.0, 1, 0, 0.5, 1, 0), "a_2": (0.0, 0, 0, 0.5, 0, 0), "b_1": (0.5, 1, 0, 1.0, 1, 0)}
        >>> sequence_table(rows, ["a", "b"])[:, [0, 3, 6]].tolist()
        [[1.0, 1.0, 2.0], [0.5, 1.0, 1.0]]
    """
    index = {name: k for k, name in enumerate(sequences)}
    table = np.zeros((len(sequences), 7))
    for key, row in per_object.items():
        k = index[key.rsplit("_", 1)[0]]
        table[k, :6] += np.asarray(row, dtype=np.float64)
        table[k, 6] += 1
    return table


def davis_values(sums: np.ndarray) -> dict[str, np.ndarray]:
    """The seven global numbers of column sums :math:`(R, 7)` (:func:`sequence_table`), each :math:`(R,)`.

    Example:
        >>> values = davis_values(np.array([[1.5, 2.0, 0.0, 1.0, 1.0, 0.2, 2.0]]))
        >>> {k: float(v[0]) for k, v in values.items() if k in ("J&F-Mean", "F-Decay")}
        {'J&F-Mean': 0.625, 'F-Decay': 0.1}
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[:, :6] / sums[:, 6:7]
    return dict(zip(GLOBAL_COLUMNS, [(means[:, 0] + means[:, 3]) / 2.0, *means.T]))


def statistics(args: argparse.Namespace, per_method: dict[str, tuple[dict[str, float], dict[str, tuple[float, ...]]]],
               set_name: str) -> dict[str, Any]:
    """The ``stats.json`` document of a run: ``per_method`` method -> (global numbers, per-object rows)."""
    sequences = sorted({key.rsplit("_", 1)[0] for _, rows in per_method.values() for key in rows})
    tables = {method: sequence_table(rows, sequences) for method, (_, rows) in per_method.items()}
    estimates = {method: {name: float(globals_[name]) for name in GLOBAL_COLUMNS}
                 for method, (globals_, _) in per_method.items()}
    stats = family_statistics(tables, davis_values, estimates, unit="sequence", resamples=args.bootstrap,
                              seed=args.seed, alpha=args.alpha, permutations=args.permutations,
                              higher={name: name not in LOWER_IS_BETTER for name in GLOBAL_COLUMNS},
                              family=f"davis {set_name}")
    stats["sequences"] = sequences
    return stats
