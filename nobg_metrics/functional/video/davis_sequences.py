"""DAVIS's dataset values: per-frame J / F grouped into sequences, each sequence's mean, recall and decay, then
the plain mean over sequences (davis2017-evaluation ``evaluation.py`` + ``evaluation_method.py``)::

    J-Mean = mean over sequences of M(J),  J-Recall = mean of O(J),  J-Decay = mean of D(J)   (F alike)
    J&F-Mean = (J-Mean + F-Mean) / 2

A "sequence" is whatever the ``sequence=`` key groups: in DAVIS's semi-supervised protocol each object of a video
is its own row (``bike-packing_1``, ``bike-packing_2``), so pass one key per (video, object).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option
from nobg_metrics.functional.video.davis import (
    DAVIS_BOUND_TH,
    STATE_NAMES,
    check_davis_args,
    davis_update,
)
from nobg_metrics.functional.video.davis_statistics import (
    DecayIndex,
    FrameKeys,
    SequenceKeys,
    SequenceTable,
    Statistic,
    sequence_table,
)

__all__ = ["davis_f", "davis_j", "davis_j_and_f"]

STATISTIC_LABELS = {"mean": "Mean", "recall": "Recall", "decay": "Decay"}
"""davis2017-evaluation's column suffixes (``J-Mean``, ``J-Recall``, ``J-Decay``)."""

FrameStates = Mapping[str, "Tensor | list[Tensor]"]
"""The per-frame states by name (``davis_j``, ``davis_f``, ``davis_sequence``, ``davis_frame``): lists of batch
tensors, or one tensor once synced over DDP."""


def _joined(state: Tensor | list[Tensor], dtype: torch.dtype) -> Tensor:
    """One tensor from a list state (empty when nothing was added)."""
    if isinstance(state, Tensor):
        return state
    return torch.cat(state) if state else torch.zeros(0, dtype=dtype)


def davis_table(states: FrameStates, measures: tuple[str, ...], decay_index: DecayIndex) -> SequenceTable:
    """The per-sequence statistics of accumulated per-frame states (:func:`sequence_table`)."""
    values = {m: _joined(states[STATE_NAMES[m]], torch.float64) for m in measures}
    sequence = _joined(states["davis_sequence"], torch.int64)
    frame = _joined(states["davis_frame"], torch.int64)
    if sequence.device != frame.device:  # an empty default next to moved states
        frame = frame.to(sequence.device)
    return sequence_table({m: v.to(sequence.device) for m, v in values.items()}, sequence, frame, decay_index)


def davis_summary(table: SequenceTable, measures: tuple[str, ...]) -> dict[str, Tensor]:
    """The global numbers as davis2017-evaluation names them: ``J-Mean`` ... ``F-Decay``, and ``J&F-Mean`` when
    both measures are there (NaN without any sequence)."""
    summary = {}
    for measure in measures:
        means = table.statistics[measure].mean(dim=0)  # np.mean over the objects' M, R, D
        for column, label in enumerate(STATISTIC_LABELS.values()):
            summary[f"{measure}-{label}"] = means[column]
    if len(measures) == 2:
        summary["J&F-Mean"] = (summary["J-Mean"] + summary["F-Mean"]) / 2.0
    return summary


def _davis_compute(states: FrameStates, measures: tuple[str, ...], statistic: Statistic,
                   decay_index: DecayIndex) -> Tensor:
    """The value of one statistic: ``J-<statistic>``, ``F-<statistic>``, or their average for both measures."""
    summary = davis_summary(davis_table(states, measures, decay_index), measures)
    values = [summary[f"{measure}-{STATISTIC_LABELS[statistic]}"] for measure in measures]
    return values[0] if len(values) == 1 else (values[0] + values[1]) / 2.0


def _check_sequence_args(statistic: str, decay_index: str, threshold: float, bound_th: float) -> None:
    check_option("statistic", statistic, Statistic)
    check_option("decay_index", decay_index, DecayIndex)
    check_davis_args(threshold, bound_th)


def _dataset_value(pred: InputMaps, gt: InputMaps, void: InputMaps | None, sequence: SequenceKeys,
                   frame: FrameKeys, measures: tuple[str, ...], statistic: Statistic, threshold: float,
                   bound_th: float, decay_index: DecayIndex, validate_args: bool) -> Tensor:
    _check_sequence_args(statistic, decay_index, threshold, bound_th)
    stats = davis_update(pred, gt, void, sequence, frame, measures, threshold, bound_th, validate_args)
    return _davis_compute(stats, measures, statistic, decay_index)


def davis_j(pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *, sequence: SequenceKeys = None,
            frame: FrameKeys = None, statistic: Statistic = "mean", threshold: float = 0.5,
            decay_index: DecayIndex = "exact", validate_args: bool = True) -> Tensor:
    r"""DAVIS region similarity of a batch: ``J-Mean`` (or ``J-Recall``, ``J-Decay``) over its sequences.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        void: optional, same layout and rule as ``gt``.
        sequence: the sequence of each image (one key, a list, or an int64 tensor; ``None``: one sequence).
        frame: frame order within sequences (``None``: the input order).
        statistic: ``"mean"``, ``"recall"`` or ``"decay"``.
        threshold: prediction threshold (strict ``>``).
        decay_index: ``"exact"`` or ``"reference"`` (the reference's uint8 bin edges from 256 frames on).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(4, 8, 8, dtype=torch.bool)
        >>> gt[:, 2:6, 2:6] = True
        >>> pred = gt.clone()
        >>> pred[2:, 2:6, 2:4] = False   # the last two frames find half the object
        >>> davis_j(pred, gt), davis_j(pred, gt, statistic="decay")
        (tensor(0.7500, dtype=torch.float64), tensor(0.5000, dtype=torch.float64))
    """
    return _dataset_value(pred, gt, void, sequence, frame, ("J",), statistic, threshold, DAVIS_BOUND_TH,
                          decay_index, validate_args)


def davis_f(pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *, sequence: SequenceKeys = None,
            frame: FrameKeys = None, statistic: Statistic = "mean", threshold: float = 0.5,
            bound_th: float = DAVIS_BOUND_TH, decay_index: DecayIndex = "exact", validate_args: bool = True) -> Tensor:
    r"""DAVIS contour accuracy of a batch: ``F-Mean`` (or ``F-Recall``, ``F-Decay``) over its sequences.

    Args as :func:`davis_j`, and ``bound_th``: the match distance, a fraction of the diagonal (``ceil``) or whole
    pixels when ``>= 1``.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(2, 40, 40, dtype=torch.bool)
        >>> gt[:, 10:30, 10:30] = True
        >>> davis_f(gt.roll(3, dims=2), gt, sequence=["a", "b"])
        tensor(0.5000, dtype=torch.float64)
    """
    return _dataset_value(pred, gt, void, sequence, frame, ("F",), statistic, threshold, bound_th, decay_index,
                          validate_args)


def davis_j_and_f(pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *, sequence: SequenceKeys = None,
                  frame: FrameKeys = None, statistic: Statistic = "mean", threshold: float = 0.5,
                  bound_th: float = DAVIS_BOUND_TH, decay_index: DecayIndex = "exact",
                  validate_args: bool = True) -> Tensor:
    r"""DAVIS's ``J&F-Mean`` of a batch: ``(J-Mean + F-Mean) / 2`` (other statistics: the same average).

    Args as :func:`davis_f`.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(2, 40, 40, dtype=torch.bool)
        >>> gt[:, 10:30, 10:30] = True
        >>> davis_j_and_f(gt.roll(3, dims=2), gt)   # J = 340 / 460, F = 0.5
        tensor(0.6196, dtype=torch.float64)
    """
    return _dataset_value(pred, gt, void, sequence, frame, ("J", "F"), statistic, threshold, bound_th, decay_index,
                          validate_args)
