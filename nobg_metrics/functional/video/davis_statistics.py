"""DAVIS's per-sequence statistics (davis2017-evaluation ``davis2017/utils.py`` ``db_statistics``) and the keys that
group frames into sequences.

Per sequence (in DAVIS's semi-supervised protocol, per object of a sequence: ``bike-packing_1``), from its
per-frame values ``v_0 .. v_{n-1}`` in frame order::

    M = nanmean(v)                          # mean
    O = nanmean(v > 0.5)                    # recall: the fraction of frames above 0.5
    ids = round(linspace(1, n, 5) + 1e-10) - 1, cast to uint8
    D = nanmean(v[ids[0] : ids[1] + 1]) - nanmean(v[ids[3] : ids[4] + 1])     # decay: first quarter - last

Our per-frame values are never NaN (J and F define every case), so ``nanmean`` is the mean. The bin edges are
exact integers: ``linspace(1, n, 5)[i] - 1 = i (n - 1) / 4`` (a dyadic fraction, exact in float64) and the
``1e-10`` turns numpy's half-to-even rounding of its ``.5`` cases into half-up, so ``ids[i] = (i (n - 1) + 2) // 4``
(exact for every ``n < 2**19``, where ``1e-10`` stops moving a float64 ``.5``). Bins overlap at their shared
edge, as the reference's inclusive slices do.

``decay_index`` names what happens from 256 frames on, where the reference's uint8 edges wrap: ``ids[4] = n - 1``
makes ``ids[4] + 1`` wrap to 0 at ``n = 256`` (``255 + 1 -> 0``: an empty last bin, NaN decay), and
``astype(np.uint8)`` wraps edges past 255 (``300 -> 44``). ``"exact"`` (default) uses the integer edges above;
``"reference"`` reproduces the wrapped slices, including the NaN decay of a slice they leave empty (numpy's
``nanmean`` of nothing). They agree on every sequence of at most 255 frames (DAVIS 2017's longest has 104).
The dataset values (``J-Mean``, ``J-Recall``, ``J-Decay``, ...) are plain means over the sequences.

Sequence keys: ``int64``. A ``str`` key is hashed (the first 8 bytes of its BLAKE2b digest, signed), so ranks
and processes agree without exchanging names; an ``int`` is its own key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import torch
from torch import Tensor

__all__ = ["davis_statistics"]

DecayIndex = Literal["exact", "reference"]
Statistic = Literal["mean", "recall", "decay"]
SequenceKeys = int | str | Sequence[int | str] | Tensor | None
"""``sequence=``: one key for the whole batch, one per image, or an int64 tensor :math:`(B,)`."""
FrameKeys = int | Sequence[int] | Tensor | None
"""``frame=``: ``None`` (arrival order), the first image's frame index (the batch's frames follow it), one index
per image, or an int64 tensor :math:`(B,)`."""

_INT64 = (-(1 << 63), (1 << 63) - 1)


def sequence_key(name: int | str) -> int:
    """The int64 key of a sequence name (an ``int`` is its own key).

    Examples:
        >>> sequence_key(7), sequence_key("bike-packing_1") == sequence_key("bike-packing_1")
        (7, True)
    """
    if isinstance(name, str):
        return int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "little", signed=True)
    if isinstance(name, bool) or not isinstance(name, int) or not _INT64[0] <= name <= _INT64[1]:
        raise TypeError(f"`sequence` keys must be str or int64 ints, got {name!r}")
    return name


def _key_tensor(name: str, keys: object, size: int, device: torch.device) -> Tensor:
    """:math:`(B,)` int64 keys from the accepted forms (module doc); a Python list is copied to the device."""
    if isinstance(keys, Tensor):
        if keys.dtype != torch.int64 or keys.shape != (size,):
            raise ValueError(f"`{name}` as a tensor must be int64 of shape ({size},) (one per image), got "
                             f"{keys.dtype} of shape {tuple(keys.shape)}")
        return keys.to(device)
    if keys is None:
        return torch.zeros(size, dtype=torch.int64, device=device)
    if isinstance(keys, (list, tuple)):
        if len(keys) != size:
            raise ValueError(f"`{name}` must hold one key per image ({size}), got {len(keys)}")
        values = [sequence_key(key) if name == "sequence" else _frame_index(key) for key in keys]
        return torch.tensor(values, dtype=torch.int64).to(device)
    if name == "sequence":
        # one key for the batch (sequence_key refuses anything but a str or an int)
        return torch.full((size,), sequence_key(cast("int | str", keys)), dtype=torch.int64, device=device)
    return torch.arange(size, dtype=torch.int64, device=device).add_(_frame_index(keys))


def _frame_index(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not _INT64[0] <= value <= _INT64[1]:
        raise TypeError(f"`frame` must be None, an int, a list of ints or an int64 tensor, got {value!r}")
    return value


def sequence_keys(sequence: SequenceKeys, size: int, device: torch.device) -> Tensor:
    """:math:`(B,)` int64 sequence keys of a batch of ``size`` images (``None``: key 0, one sequence)."""
    return _key_tensor("sequence", sequence, size, device)


def frame_keys(frame: FrameKeys, size: int, device: torch.device) -> Tensor:
    """:math:`(B,)` int64 frame indices of a batch (``None``: zeros, the frames then keep their arrival order)."""
    return _key_tensor("frame", frame, size, device)


def sequence_names(sequence: SequenceKeys) -> dict[int, str]:
    """``{key: name}`` of the ``str`` keys of a ``sequence=`` argument (for the per-sequence tables)."""
    names = [sequence] if isinstance(sequence, str) else sequence if isinstance(sequence, (list, tuple)) else []
    return {sequence_key(name): name for name in names if isinstance(name, str)}


def _bin_edges(counts: Tensor, decay_index: DecayIndex) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(start_0, stop_0, start_3, stop_3)``: the half-open frame ranges of the first and last decay bins."""
    ids = [(index * (counts - 1) + 2).div(4, rounding_mode="floor") for index in range(5)]
    if decay_index == "exact":
        return ids[0], ids[1] + 1, ids[3], ids[4] + 1
    wrapped = [edge.remainder(256) for edge in ids]  # astype(np.uint8); then uint8 ids[i + 1] + 1 wraps again
    return wrapped[0], (wrapped[1] + 1).remainder(256), wrapped[3], (wrapped[4] + 1).remainder(256)


@dataclass
class SequenceTable:
    """Per-sequence statistics, sequences in ascending key order.

    Attributes:
        keys: :math:`(S,)` int64 sequence keys.
        frames: :math:`(S,)` int64 frames per sequence.
        statistics: ``{measure: (S, 3)}`` float64 ``[mean, recall, decay]`` per sequence.
        order: :math:`(N,)` int64 the frames sorted by (sequence, frame), ties in arrival order.
    """

    keys: Tensor
    frames: Tensor
    statistics: dict[str, Tensor]
    order: Tensor


def sequence_table(values: dict[str, Tensor], sequence: Tensor, frame: Tensor,
                   decay_index: DecayIndex = "exact") -> SequenceTable:
    """Group per-frame values by sequence and compute DAVIS's mean, recall and decay of each (reads the host:
    the number of sequences).

    Args:
        values: ``{measure: (N,) float64}`` per-frame values in arrival order.
        sequence: :math:`(N,)` int64 keys.
        frame: :math:`(N,)` int64 frame indices (ties keep the arrival order).
        decay_index: ``"exact"`` or ``"reference"`` (module doc).

    Returns:
        The :class:`SequenceTable`.
    """
    by_frame = torch.sort(frame, stable=True).indices
    order = by_frame[torch.sort(sequence[by_frame], stable=True).indices]
    keys, counts = torch.unique_consecutive(sequence[order], return_counts=True)
    segment = torch.repeat_interleave(torch.arange(keys.shape[0], device=keys.device), counts)
    offset = torch.arange(order.shape[0], device=order.device) - (torch.cumsum(counts, 0) - counts)[segment]
    start0, stop0, start3, stop3 = (edge[segment] for edge in _bin_edges(counts, decay_index))
    in_first = ((offset >= start0) & (offset < stop0)).double()
    in_last = ((offset >= start3) & (offset < stop3)).double()
    statistics = {}
    for measure, per_frame in values.items():
        ordered = per_frame[order]
        columns = torch.stack([ordered, (ordered > 0.5).double(), ordered * in_first, in_first, ordered * in_last,
                               in_last], dim=1)
        sums = torch.zeros((keys.shape[0], 6), dtype=torch.float64, device=keys.device).index_add_(0, segment, columns)
        frames = counts.double()
        decay = sums[:, 2] / sums[:, 3] - sums[:, 4] / sums[:, 5]  # 0/0 only for "reference"'s empty slices: NaN
        statistics[measure] = torch.stack([sums[:, 0] / frames, sums[:, 1] / frames, decay], dim=1)
    return SequenceTable(keys, counts, statistics, order)


def davis_statistics(values: Tensor, decay_index: DecayIndex = "exact") -> tuple[Tensor, Tensor, Tensor]:
    """``db_statistics`` of one sequence: ``(mean, recall, decay)`` of its per-frame values in frame order.

    Args:
        values: :math:`(N,)` float per-frame values, ``N >= 1``.
        decay_index: ``"exact"`` or ``"reference"`` (module doc).

    Returns:
        three scalar float64 tensors.

    Examples:
        >>> davis_statistics(torch.tensor([0.9, 0.8, 0.7, 0.6, 0.5, 0.4]))
        (tensor(0.6500, dtype=torch.float64), tensor(0.6667, dtype=torch.float64), tensor(0.4000, dtype=torch.float64))
    """
    if values.ndim != 1 or values.shape[0] == 0:
        raise ValueError("`values` must be a non-empty 1-D tensor of per-frame values, "
                         f"got shape {tuple(values.shape)}")
    zeros = torch.zeros(values.shape[0], dtype=torch.int64, device=values.device)
    table = sequence_table({"v": values.double()}, zeros, zeros, decay_index)
    mean, recall, decay = table.statistics["v"][0].unbind()
    return mean, recall, decay
