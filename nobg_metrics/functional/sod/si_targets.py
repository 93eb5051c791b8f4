"""The targets of the size-invariant metrics: the gt's components, as boxes, from one labelling.

Reference: PySODMetrics 1.6.2 ``size_invariance.parse_connected_components`` and
``encode_bboxwise_tgts_bitwise`` (Li et al., ICML 2024). The gt is labelled 4-connected
(``skimage.measure.label(connectivity=1)``); every component of area ``>= 50`` is a target; when none reaches
50, every component of the largest area is one (ties all kept). A target is its bounding box. An image whose
gt has no foreground is scored as a whole (``max_valid_tgt_idx == 0``: ``_update_metrics(pred, gt)``): here it
gets one target, the whole image, which gives the reference's value everywhere.

Boxes are kept as their four bounds (the reference's bits of a float64 map lose targets beyond ~52
overlapping boxes and overflow past 64 targets; bounds are exact for any number).

Two paths, one answer (:func:`find_targets`):

- where host reads are free (CPU), the runs of :class:`nobg_metrics.ops.components.Runs` and exactly as many
  targets as there are (work ~ the runs of the gt);
- elsewhere, fixed sizes: padded run and edge lists, the fixed-round union-find (the ``"fixed"`` form of
  :func:`~nobg_metrics.ops.union_find.union_find_roots`), and ``max_targets`` slots per image; an image with more
  targets is flagged in ``overflow`` (the metrics then refuse to compute, naming ``max_targets``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.components import Runs
from nobg_metrics.ops.level_components import FIXED_SLOTS_PER_CALL, level_steps, rises, sorted_keys
from nobg_metrics.ops.union_find import union_find_roots

AREA_THRESHOLD = 50
"""Components of at least this many pixels are targets (``parse_connected_components(area_threshold=50)``)."""

DEFAULT_MAX_TARGETS = 128
"""Target slots per image on the fixed-size (device) path; the CPU path has no bound. The reference itself
fails beyond 64 targets (an ``OverflowError`` in ``get_kth_bit``)."""


@dataclass
class Targets:
    """The targets of a :math:`(B, H, W)` batch, one entry per target (or slot), image-major.

    Attributes:
        image: :math:`(T,)` int64 image of each target.
        top, bottom, left, right: :math:`(T,)` int64 inclusive bounds of each box (an unused slot: an empty
            box, ``bottom < top``).
        valid: :math:`(T,)` bool, False for the unused slots of the fixed-size path.
        count: :math:`(B,)` int64 targets per image, ``>= 1`` (an image without foreground: the whole image).
        overflow: :math:`(B,)` int64, 1 where an image had more targets than its slots (fixed-size path only).
        slots: targets per image of the fixed-size layout (``T = B · slots``), or ``None`` (exact, flat).
    """

    image: Tensor
    top: Tensor
    bottom: Tensor
    left: Tensor
    right: Tensor
    valid: Tensor
    count: Tensor
    overflow: Tensor
    slots: int | None = None

    @property
    def area(self) -> Tensor:
        """:math:`(T,)` int64 box areas (0 for unused slots)."""
        height = (self.bottom - self.top + 1).clamp_min(0)
        return height * (self.right - self.left + 1).clamp_min(0)


def find_targets(gt: Tensor, max_targets: int = DEFAULT_MAX_TARGETS, engine: host_reads.Engine = "auto") -> Targets:
    """The reference's targets of every image of a batch.

    Args:
        gt: :math:`(B, H, W)` bool.
        max_targets: slots per image on the fixed-size path (no bound on the data-sized one).
        engine: ``"data_sized"`` (``"auto"`` on CPU): the exact targets (host reads); ``"fixed"`` (``"auto"`` off
            CPU): ``max_targets`` slots per image, no host read.

    Returns:
        :class:`Targets`.

    Examples:
        >>> gt = torch.zeros(1, 12, 20, dtype=torch.bool)
        >>> gt[0, 1:9, 1:9] = True; gt[0, 2:4, 12:15] = True; gt[0, 9:11, 16:19] = True
        >>> t = find_targets(gt)  # 64 px, then two of 6 px: only the first reaches 50
        >>> t.count.tolist(), t.top.tolist(), t.bottom.tolist(), t.left.tolist(), t.right.tolist()
        ([1], [1], [8], [1], [8])
        >>> t = find_targets(gt[:, :, 10:])  # only small ones: every one of the largest area
        >>> t.count.tolist(), t.left.tolist(), t.right.tolist()
        ([2], [2, 6], [4, 8])
    """
    if host_reads.resolve_engine(engine, gt) == "data_sized":
        return _exact_targets(gt)
    b, h, w = gt.shape
    block = max(1, FIXED_SLOTS_PER_CALL // max(1, h * ((w + 1) // 2)))
    parts = [_fixed_targets(gt[i:i + block], max_targets) for i in range(0, b, block)]
    if len(parts) == 1:
        return parts[0]
    for index, part in enumerate(parts):
        part.image = part.image + index * block
    fields = ("image", "top", "bottom", "left", "right", "valid", "count", "overflow")
    return Targets(**{name: torch.cat([getattr(p, name) for p in parts]) for name in fields}, slots=max_targets)


def _component_boxes(parent: Tensor, row: Tensor, first: Tensor, last: Tensor, length: Tensor,
                     real: Tensor, height: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Area and box of every component, held at its root run: ``(area, top, bottom, left, right)``."""
    runs = parent.numel()
    zeros = torch.zeros(runs, dtype=torch.int64, device=parent.device)
    area = zeros.index_add(0, parent, torch.where(real, length, 0))
    top = torch.full_like(zeros, height).scatter_reduce(0, parent, torch.where(real, row, height), "amin")
    bottom = torch.full_like(zeros, -1).scatter_reduce(0, parent, torch.where(real, row, -1), "amax")
    left = torch.full_like(zeros, 2**62).scatter_reduce(0, parent, torch.where(real, first, 2**62), "amin")
    right = torch.full_like(zeros, -1).scatter_reduce(0, parent, torch.where(real, last, -1), "amax")
    return area, top, bottom, left, right


def _selected(is_root: Tensor, area: Tensor, image: Tensor, images: int) -> Tensor:
    """The reference's rule per image: roots of area >= 50, or, if an image has none, its largest roots."""
    big = is_root & (area >= AREA_THRESHOLD)
    zeros = torch.zeros(images, dtype=torch.int64, device=area.device)
    has_big = zeros.scatter_reduce(0, image, big.long(), "amax")
    largest = zeros.scatter_reduce(0, image, torch.where(is_root, area, 0), "amax")
    fallback = is_root & (has_big.index_select(0, image) == 0) & (area == largest.index_select(0, image))
    return big | (fallback & (area > 0))


def _exact_targets(gt: Tensor) -> Targets:
    """Host reads free: label by the data, exactly as many targets as there are (image-major, raster order)."""
    b, h, w = gt.shape
    device = gt.device
    runs = Runs(gt.contiguous(), 4)
    parent = runs.parent[1:] - 1  # root run of every run (0-based; the smallest run id: its first pixel)
    image = runs.image_of_run()
    within = runs.start_index - image * (h * w)
    row = torch.div(within, w, rounding_mode="floor")
    real = torch.ones_like(parent, dtype=torch.bool)
    area, top, bottom, left, right = _component_boxes(parent, row, within % w, (runs.end_index - image * (h * w)) % w,
                                                      runs.length, real, h)
    is_root = parent == torch.arange(parent.numel(), device=device)
    chosen = torch.nonzero(_selected(is_root, area, image, b)).squeeze(1)
    count = torch.zeros(b, dtype=torch.int64, device=device).index_add_(0, image.index_select(0, chosen),
                                                                         torch.ones_like(chosen))
    empty = torch.nonzero(count == 0).squeeze(1)  # no foreground: the whole image is the one target
    whole = torch.ones_like(empty)
    fills = ((image, empty), (top, 0 * whole), (bottom, (h - 1) * whole), (left, 0 * whole), (right, (w - 1) * whole))
    columns = [torch.cat([x.index_select(0, chosen), fill]) for x, fill in fills]
    order = torch.sort(columns[0], stable=True).indices  # image-major
    image, top, bottom, left, right = (column.index_select(0, order) for column in columns)
    return Targets(image, top, bottom, left, right, torch.ones_like(image, dtype=torch.bool),
                   count.clamp_min(1), torch.zeros_like(count))


def _flat(pair: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """Both tensors of a pair flattened to 1-D views."""
    return pair[0].view(-1), pair[1].view(-1)


def _fixed_targets(gt: Tensor, max_targets: int) -> Targets:
    """No host read: padded runs (``B · H · ceil(W / 2)``, a row's most), fixed rounds, ``max_targets`` slots.

    The run and edge lists of :mod:`nobg_metrics.ops.level_components` with one level; padding sits at level 2
    and is never a target.
    """
    b, h, w = gt.shape
    device = gt.device
    pixels, image_pixels = b * h * w, h * w
    levels = gt.to(torch.int16)
    bound = (w + 1) // 2
    capacity = b * h * bound
    start_keys = sorted_keys(*level_steps(*_flat(rises(levels)), capacity=capacity, pad_level=2), pixels, 1)
    end_keys = sorted_keys(*level_steps(*_flat(rises(levels, last=True)), capacity=capacity, pad_level=2),
                           pixels, 1)
    runs = start_keys.numel()
    run_level = torch.div(start_keys, pixels, rounding_mode="floor")
    real = run_level == 1
    start = start_keys - run_level * pixels
    end = end_keys - run_level * pixels  # the i-th end closes the i-th run (both in raster order)
    parent = torch.arange(runs, device=device)
    if h > 1:
        overlap = torch.minimum(levels[:, :-1], levels[:, 1:])  # (B, H-1, W)
        where, edge_level = level_steps(*_flat(rises(overlap)), capacity=b * (h - 1) * bound, pad_level=2)
        rows = torch.div(where, w, rounding_mode="floor")
        upper = where + torch.div(rows, h - 1, rounding_mode="floor") * w  # (b, y, x) of (B, H-1, W) in (B, H, W)
        keys = sorted_keys(upper, edge_level, pixels, 1)
        upper_run = torch.searchsorted(start_keys, keys, right=True) - 1  # padding: the last run, twice (a loop)
        lower_run = torch.searchsorted(start_keys, keys + w, right=True) - 1
        parent = union_find_roots(runs, upper_run, lower_run, engine="fixed", first_chains=h)
    image = torch.where(real, torch.div(start, image_pixels, rounding_mode="floor"), b)  # padding: image b
    within = start % image_pixels
    area, top, bottom, left, right = _component_boxes(
        parent, torch.div(within, w, rounding_mode="floor"), within % w, end % image_pixels % w, end - start + 1,
        real, h)
    is_root = (parent == torch.arange(runs, device=device)) & real
    chosen = _selected(is_root, area, image, b + 1)
    count = torch.zeros(b + 1, dtype=torch.int64, device=device).index_add_(0, image, chosen.long())
    offset = torch.cumsum(count, 0) - count
    rank = torch.cumsum(chosen.long(), 0) - 1 - offset.index_select(0, image)  # runs are image-major
    slot = torch.where(chosen & (rank < max_targets), image * max_targets + rank, b * max_targets)
    count = count[:b]

    def place(values: Tensor, empty: int) -> Tensor:
        out = torch.full((b * max_targets + 1,), -1, dtype=torch.int64, device=device)
        out = out.scatter_reduce(0, slot, torch.where(chosen, values, -1), "amax")[:-1].view(b, max_targets)
        return torch.where(out >= 0, out, empty)

    first_slot = torch.arange(max_targets, device=device) == 0
    whole = (count == 0)[:, None] & first_slot  # no foreground: the whole image in slot 0
    top, left = (torch.where(whole, 0, place(x, 0)) for x in (top, left))
    bottom = torch.where(whole, h - 1, place(bottom, -1))
    right = torch.where(whole, w - 1, place(right, -1))
    valid = (torch.arange(max_targets, device=device) < count.clamp(1, max_targets)[:, None])
    flat_image = torch.arange(b, device=device).repeat_interleave(max_targets, output_size=b * max_targets)
    return Targets(flat_image, top.view(-1), bottom.view(-1), left.view(-1), right.view(-1), valid.view(-1),
                   count.clamp(1, max_targets), (count > max_targets).long(), slots=max_targets)
