"""DAVIS J, F and J&F as ``Metric``s: per-frame values kept in order, grouped into sequences at ``compute``.

State: DAVIS's decay compares the first and last quarter of each sequence's frames, and the quarters are known
only once the sequence is complete, so the per-frame values must be kept, in order: **list states of per-frame
scalars** (never pixels) — ``davis_j`` / ``davis_f`` (float64), ``davis_sequence`` (int64 key, a ``str`` hashed) and
``davis_frame`` (int64 order), 8 bytes per frame and measure, ``dist_reduce_fx="cat"``. Frames keep their arrival
order within a sequence (``frame=`` overrides it), across ``merge_state`` (this metric's frames first) and DDP
(rank order: pass ``frame=`` when one sequence's frames are spread over ranks). The names of ``str`` keys live
beside the states (``state_dict``'s extra state) for the tables; keys from other ranks print as ints.

The list states are the base class's (:meth:`~nobg_metrics.metrics.base.NobgMetric._add_list`): records of a
declared dtype, checked on load, appended in one step, sent from an empty rank as empty records of their layout;
``merge_state`` appends the incoming frames after this metric's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.video.davis import DAVIS_BOUND_TH, STATE_NAMES, davis_update
from nobg_metrics.functional.video.davis_sequences import (
    FrameStates,
    _check_sequence_args,
    _davis_compute,
    davis_summary,
    davis_table,
)
from nobg_metrics.functional.video.davis_statistics import (
    DecayIndex,
    FrameKeys,
    SequenceKeys,
    Statistic,
    sequence_names,
)
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["DavisF", "DavisJ", "DavisJAndF"]


def _items(state: Tensor | list[Tensor]) -> list[Tensor]:
    return [state] if isinstance(state, Tensor) else list(state)


class _DavisFrames(NobgMetric):
    """The per-frame states and the per-sequence tables shared by :class:`DavisJ`, :class:`DavisF` and
    :class:`DavisJAndF`."""

    _measures: tuple[str, ...] = ("J", "F")
    higher_is_better = True  # for the mean and the recall; a decay is better lower (torchmetrics fixes it per class)
    plot_lower_bound = -1.0  # a decay can be negative
    plot_upper_bound = 1.0

    def __init__(self, statistic: Statistic = "mean", *, threshold: float = 0.5, bound_th: float = DAVIS_BOUND_TH,
                 decay_index: DecayIndex = "exact", validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_sequence_args(statistic, decay_index, threshold, bound_th)
        self.statistic, self.threshold, self.bound_th, self.decay_index = statistic, threshold, bound_th, decay_index
        options: dict[str, object] = {"threshold": float(threshold)}
        if "F" in self._measures:
            options["bound_th"] = float(bound_th)
        self._add_fingerprint(options)
        self._list_dtypes = {STATE_NAMES[m]: torch.float64 for m in self._measures}
        self._list_dtypes.update(davis_sequence=torch.int64, davis_frame=torch.int64)
        for name, dtype in self._list_dtypes.items():  # per-frame scalars, in arrival order
            self._add_list(name, dtype)
        self._sequence_names: dict[int, str] = {}

    def update(self, pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *,
               sequence: SequenceKeys = None, frame: FrameKeys = None) -> None:
        """Add frames: ``pred``, ``gt`` (and ``void``) :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or
        lists; ``sequence`` one key (``str`` or ``int``) for the batch, one per image, or an int64 tensor;
        ``frame`` the first image's frame index, one per image, or ``None`` (arrival order)."""
        self._accumulate(self._batch_statistics(pred, gt, void, sequence=sequence, frame=frame))

    def _statistics(self, pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *,
                    sequence: SequenceKeys = None, frame: FrameKeys = None) -> Statistics:
        stats = davis_update(pred, gt, void, sequence, frame, self._measures, self.threshold, self.bound_th,
                              self.validate_args)
        self._sequence_names.update(sequence_names(sequence))  # the names of str keys, for the tables
        return {name: stats[name] for name in self._list_dtypes}

    def _value(self, states: Mapping[str, Any]) -> Tensor:
        """The dataset value of ``statistic``: scalar float64 (NaN before any frame)."""
        return _davis_compute({name: states[name] for name in self._list_dtypes}, self._measures, self.statistic,
                              self.decay_index)

    def _frame_states(self) -> FrameStates:
        states = self.metric_state
        return {name: states[name] for name in self._list_dtypes}

    def _name(self, key: int) -> str | int:
        return self._sequence_names.get(key, key)

    def summary(self) -> dict[str, Tensor]:
        """Every global number davis2017-evaluation prints for these measures (``J-Mean`` .. ``F-Decay``,
        ``J&F-Mean``): scalar float64 tensors."""
        with self.sync_context():
            return davis_summary(davis_table(self._frame_states(), self._measures, self.decay_index), self._measures)

    def per_sequence(self) -> dict[str, Any]:
        """The per-sequence table, sequences in key order: ``{"sequence": [names], "frames": (S,) int64,
        "J-Mean": (S,) float64, "J-Recall": ..., "J-Decay": ..., "F-Mean": ...}`` (names: the ``str`` keys given,
        else the int keys)."""
        with self.sync_context():
            table = davis_table(self._frame_states(), self._measures, self.decay_index)
        out: dict[str, Any] = {"sequence": [self._name(key) for key in table.keys.tolist()], "frames": table.frames}
        for measure in self._measures:
            for column, label in enumerate(("Mean", "Recall", "Decay")):
                out[f"{measure}-{label}"] = table.statistics[measure][:, column]
        return out

    def per_frame(self) -> dict[str, Any]:
        """The per-frame values in (sequence, frame) order: ``{"sequence": [names], "frame": (N,) int64 as given,
        "position": (N,) int64 index within its sequence, "J": (N,) float64, "F": ...}``."""
        with self.sync_context():
            states = {name: torch.cat(_items(state)) if _items(state) else torch.zeros(0, dtype=self._list_dtypes[name])
                      for name, state in self._frame_states().items()}
            table = davis_table(states, self._measures, self.decay_index)
        keys = states["davis_sequence"][table.order]
        starts = torch.cumsum(table.frames, 0) - table.frames
        position = torch.arange(keys.shape[0]) - torch.repeat_interleave(starts, table.frames).cpu()
        out: dict[str, Any] = {"sequence": [self._name(key) for key in keys.tolist()],
                               "frame": states["davis_frame"][table.order], "position": position}
        out.update({measure: states[STATE_NAMES[measure]][table.order] for measure in self._measures})
        return out

    def get_extra_state(self) -> dict[str, dict[int, str]]:
        """The names of ``str`` sequence keys (saved in ``state_dict`` with the states, when they are persistent)."""
        return {"sequence_names": dict(self._sequence_names)}

    def set_extra_state(self, state: Any) -> None:
        """Restore the names saved by :meth:`get_extra_state`."""
        self._sequence_names.update(state.get("sequence_names", {}))

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """The base's merge (the incoming frames after this metric's), with the incoming sequence names."""
        super().merge_state(incoming_state)
        if isinstance(incoming_state, _DavisFrames):
            self._sequence_names.update(incoming_state._sequence_names)


class DavisJAndF(_DavisFrames):
    """DAVIS ``J&F-Mean`` (davis2017-evaluation): ``(J-Mean + F-Mean) / 2`` over sequences; ``summary()`` gives all
    seven global numbers, ``per_sequence()`` / ``per_frame()`` the tables.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).
    - ``void`` (:class:`~torch.Tensor`, optional): the same layout and reading rule as ``gt``: pixels that count for
      neither.
    - ``sequence`` (:class:`str`, :class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames'
      sequence, one ``str`` / ``int`` key for the batch, one per image, or an int64 tensor :math:`(B,)`; in the
      semi-supervised protocol one key per object (``"bike-packing_1"``).
    - ``frame`` (:class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames' order within their
      sequence: the first image's frame index, one per image, or ``None`` (arrival order).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``j_and_f`` (:class:`~torch.Tensor`): scalar float64, the average of J's and F's ``statistic`` over sequences
      (``J&F-Mean`` by default): ``statistic="mean"`` and ``"recall"`` in [0, 1], ``"decay"`` in [-1, 1]; NaN before any
      frame. ``summary()``, ``per_sequence()`` and ``per_frame()`` give the tables.

    Args:
        statistic: ``"mean"`` (``J&F-Mean``), ``"recall"`` or ``"decay"`` (the average of J's and F's).
        threshold: prediction threshold (strict ``>``).
        bound_th: F's match distance, a fraction of the diagonal (``ceil``), or whole pixels when ``>= 1``.
        decay_index: ``"exact"`` or ``"reference"`` (the reference's uint8 bin edges from 256 frames on).
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(2, 40, 40, dtype=torch.bool)
        >>> gt[:, 10:30, 10:30] = True
        >>> metric = DavisJAndF()
        >>> metric.update(gt.roll(3, dims=2), gt, sequence="cows_1")
        >>> metric.compute()
        tensor(0.6196, dtype=torch.float64)
        >>> round(metric.summary()["J-Mean"].item(), 4), metric.per_sequence()["sequence"]
        (0.7391, ['cows_1'])
    """

    _measures = ("J", "F")


class DavisJ(_DavisFrames):
    """DAVIS region similarity: ``J-Mean`` (or ``J-Recall``, ``J-Decay``) over sequences, J = IoU per frame (1 for an
    empty union, void excluded).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).
    - ``void`` (:class:`~torch.Tensor`, optional): the same layout and reading rule as ``gt``: pixels that count for
      neither (excluded from the IoU).
    - ``sequence`` (:class:`str`, :class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames'
      sequence, one ``str`` / ``int`` key for the batch, one per image, or an int64 tensor :math:`(B,)`; in the
      semi-supervised protocol one key per object (``"bike-packing_1"``).
    - ``frame`` (:class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames' order within their
      sequence: the first image's frame index, one per image, or ``None`` (arrival order).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``j`` (:class:`~torch.Tensor`): scalar float64, the statistic of the per-frame region similarity J over sequences:
      ``statistic="mean"`` and ``"recall"`` in [0, 1], ``"decay"`` in [-1, 1]; NaN before any frame. ``summary()``,
      ``per_sequence()`` and ``per_frame()`` give the tables.

    Args:
        statistic: ``"mean"``, ``"recall"`` or ``"decay"``.
        threshold: prediction threshold (strict ``>``).
        decay_index: ``"exact"`` or ``"reference"``.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(4, 8, 8, dtype=torch.bool)
        >>> gt[:, 2:6, 2:6] = True
        >>> pred = gt.clone()
        >>> pred[2:, 2:6, 2:4] = False
        >>> metric = DavisJ(statistic="decay")
        >>> metric.update(pred, gt, sequence="a")
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _measures = ("J",)

    def __init__(self, statistic: Statistic = "mean", *, threshold: float = 0.5, decay_index: DecayIndex = "exact",
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(statistic, threshold=threshold, decay_index=decay_index, validate_args=validate_args,
                         **kwargs)


class DavisF(_DavisFrames):
    """DAVIS contour accuracy: ``F-Mean`` (or ``F-Recall``, ``F-Decay``) over sequences (per frame: boundary maps
    matched within a disk of ``ceil(0.008 * diag)`` pixels).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).
    - ``void`` (:class:`~torch.Tensor`, optional): the same layout and reading rule as ``gt``: pixels that count for
      neither (zeroed in both masks before their contours are taken).
    - ``sequence`` (:class:`str`, :class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames'
      sequence, one ``str`` / ``int`` key for the batch, one per image, or an int64 tensor :math:`(B,)`; in the
      semi-supervised protocol one key per object (``"bike-packing_1"``).
    - ``frame`` (:class:`int`, a list or :class:`~torch.Tensor`; keyword, optional): the frames' order within their
      sequence: the first image's frame index, one per image, or ``None`` (arrival order).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``f`` (:class:`~torch.Tensor`): scalar float64, the statistic of the per-frame contour accuracy F over sequences:
      ``statistic="mean"`` and ``"recall"`` in [0, 1], ``"decay"`` in [-1, 1]; NaN before any frame. ``summary()``,
      ``per_sequence()`` and ``per_frame()`` give the tables.

    Args:
        statistic: ``"mean"``, ``"recall"`` or ``"decay"``.
        threshold: prediction threshold (strict ``>``).
        bound_th: match distance, a fraction of the diagonal (``ceil``), or whole pixels when ``>= 1``.
        decay_index: ``"exact"`` or ``"reference"``.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 40, 40, dtype=torch.bool)
        >>> gt[0, 10:30, 10:30] = True
        >>> metric = DavisF()
        >>> metric.update(gt.roll(3, dims=2), gt)
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _measures = ("F",)
