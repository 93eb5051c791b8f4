"""The pixel counts of one image size from the masks' row bands, bit-packed (where host reads are free: CPU).

A mask is 0 outside the band of rows it occupies, and so is its boundary; the erosion of a row band stacked
between zero rows equals the erosion of the whole mask with zero padding (a window that reaches past the band
meets a zero row, as it meets the mask's own zero rows in the image). Here, for all images of one size:

1. one pass over each stack of masks finds every mask's band of rows ``[top, bottom)``;
2. the row bands of all masks are stacked into one *atlas* (full width, one zero row between bands), packed
   into bits (:func:`~nobg_metrics.ops.morphology.pack_bits`) and, for boundaries, eroded once
   (:func:`~nobg_metrics.ops.morphology.square_window_packed`): ``boundary = mask AND NOT eroded``; the areas are
   popcounts of the atlas rows summed over each band;
3. a detection / gt pair whose bands share rows (same category, or all pairs for the micro average; any other
   pair intersects in nothing or is never compared) is counted on its shared rows only: the packed rows of
   both are gathered, AND-ed and popcounted, for all pairs at once — masks and boundaries alike.

Columns stay aligned with the image, so no shift is needed; every count is an exact integer, equal to what the
full-image products of :mod:`~nobg_metrics.functional.instance.iou` (the device path, no host reads) give.

Masks given as runs (:meth:`~nobg_metrics.ops.row_bands.RowBands.from_runs`) skip the atlas:
mask counts come from the runs (:mod:`~nobg_metrics.functional.instance.run_counts`); with boundaries each mask
is drawn into its own column words only and eroded there (:mod:`~nobg_metrics.ops.run_strips`), and a pair is
popcounted on its shared rows and shared words — the same integers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.instance.iou import Reach, reachable
from nobg_metrics.functional.instance.run_counts import given_as_runs, run_counts
from nobg_metrics.ops import run_strips
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.morphology import count_bits, pack_bits, square_window_packed
from nobg_metrics.ops.row_bands import RowBands


def _row_bands(stack: Tensor) -> tuple[list[int], list[int]]:
    """Row bands ``[top, bottom)`` of the masks of a :math:`(N, H, W)` bool stack (an empty mask: ``[0, 0)``)."""
    count, height, width = stack.shape
    if count == 0:
        return [], []
    # a row is occupied when any of its bytes is 1: 8 bytes at a time where the row splits into int64 words
    words = stack.view(torch.int64) if width % 8 == 0 and stack.storage_offset() % 8 == 0 else stack.view(torch.uint8)
    occupied = (words.amax(dim=2) > 0).to(torch.uint8)
    tops = occupied.argmax(dim=1).tolist()
    bottoms = (height - occupied.flip(1).argmax(dim=1)).tolist()
    empty = (occupied.amax(dim=1) == 0).tolist()
    return [0 if e else t for t, e in zip(tops, empty)], [0 if e else b for b, e in zip(bottoms, empty)]


def _popcount_rows(words: Tensor) -> Tensor:
    """Set bits of each packed row: :math:`(L, M)` int64 -> :math:`(L,)` int64."""
    if words.shape[0] == 0:
        return torch.zeros(0, dtype=torch.int64)
    return count_bits(words[:, None, :])


def _bands(stack: Tensor | RowBands) -> tuple[list[int], list[int]]:
    return (stack.tops, stack.bottoms) if isinstance(stack, RowBands) else _row_bands(stack)


def crop_counts(dets: list[Tensor | RowBands], gts: list[Tensor | RowBands], det_labels: list[Tensor],
                gt_labels: list[Tensor], all_pairs: bool, dilation_ratio: float | None,
                reach: Reach | None = None) -> list[dict[str, Tensor]]:
    """Pixel and pair counts of the images of one size (module notes).

    Args:
        dets, gts: per image :math:`(N, H, W)` and :math:`(M, H, W)` bool masks (CPU), dense or as
            :class:`~nobg_metrics.ops.row_bands.RowBands` (their bands are the atlas' pieces).
        det_labels, gt_labels: per image :math:`(N,)` and :math:`(M,)` int64.
        all_pairs: count every pair sharing rows (micro average), not only those of one category.
        dilation_ratio: boundaries too (``None``: masks only).
        reach: masks given as runs only: leave out the pairs whose IoU cannot reach ``reach.floor``
            (:class:`~nobg_metrics.functional.instance.iou.Reach`; their counts are 0); ``None``: count all.

    Returns:
        Per image ``{"det_area", "gt_area"}`` :math:`(N,)` / :math:`(M,)` int64, ``"inter"`` :math:`(N, M)` int64
        and, with boundaries, ``"det_band", "gt_band", "band_inter"``.

    Examples:
        >>> m = torch.zeros(2, 6, 7, dtype=torch.bool); m[0, 1:5, 1:6] = True; m[1, 2:6, 3:7] = True
        >>> counts = crop_counts([m[:1]], [m[1:]], [torch.tensor([1])], [torch.tensor([1])], False, 0.02)[0]
        >>> counts["inter"].tolist(), counts["band_inter"].tolist(), counts["det_band"].tolist()
        ([[9]], [[2]], [14])
    """
    if given_as_runs(dets) and given_as_runs(gts):  # from the runs: counted on them, or drawn into strips
        if dilation_ratio is None:
            return run_counts(dets, gts, det_labels, gt_labels, all_pairs, reach)  # type: ignore[arg-type]
        return _strip_counts(dets, gts, det_labels, gt_labels, all_pairs, dilation_ratio,  # type: ignore[arg-type]
                             reach)
    height, width = gts[0].shape[-2], gts[0].shape[-1]
    det_counts, gt_counts = [d.shape[0] for d in dets], [g.shape[0] for g in gts]
    det_bands, gt_bands = [_bands(d) for d in dets], [_bands(g) for g in gts]
    gap = torch.zeros((1, width), dtype=torch.bool)
    pieces, row = [gap], 1
    det_first: list[int] = []
    gt_first: list[int] = []
    for stacks, bands, firsts in ((dets, det_bands, det_first), (gts, gt_bands, gt_first)):
        for stack, (tops, bottoms) in zip(stacks, bands):  # the row bands, a zero row after each
            if isinstance(stack, RowBands):  # those pieces already
                firsts.extend(row + start for start in stack.starts())
                pieces.append(stack.rows)
                row += stack.rows.shape[0]
                continue
            for k, (top, bottom) in enumerate(zip(tops, bottoms)):  # (masks of different band sizes)
                firsts.append(row)
                if bottom > top:
                    pieces += [stack[k, top:bottom], gap]
                    row += bottom - top + 1
    masks = pack_bits([torch.cat(pieces)[None]])
    layers = [masks]
    if dilation_ratio is not None:
        eroded, masks = square_window_packed(masks, width, dilation_radius(height, width, dilation_ratio), True)
        layers = [masks, eroded.bitwise_not_().bitwise_and_(masks)]
    layers = [layer[0] for layer in layers]  # (rows, words) each: masks, then boundaries
    def as_tensor(values: list[int]) -> Tensor:
        return torch.tensor(values, dtype=torch.int64)

    det_top = as_tensor([t for tops, _ in det_bands for t in tops])
    det_bottom = as_tensor([b for _, bottoms in det_bands for b in bottoms])
    gt_top = as_tensor([t for tops, _ in gt_bands for t in tops])
    gt_bottom = as_tensor([b for _, bottoms in gt_bands for b in bottoms])
    det_start, gt_start = as_tensor(det_first), as_tensor(gt_first)
    # areas: the popcounts of each band's rows (a running sum over the atlas rows)
    row_sums = [torch.cat([torch.zeros(1, dtype=torch.int64), _popcount_rows(layer).cumsum(0)]) for layer in layers]
    det_areas = [sums[det_start + det_bottom - det_top] - sums[det_start] for sums in row_sums]
    gt_areas = [sums[gt_start + gt_bottom - gt_top] - sums[gt_start] for sums in row_sums]
    image, d_local, g_local, d, g, low, high = _pairs(det_counts, gt_counts, (det_top, det_bottom, gt_top, gt_bottom),
                                                      None if all_pairs else (det_labels, gt_labels))
    lengths = high - low
    pair = torch.repeat_interleave(torch.arange(d.numel()), lengths)
    y = low[pair] + torch.arange(pair.numel()) - (lengths.cumsum(0) - lengths)[pair]
    first_rows = det_start[d][pair] + y - det_top[d][pair]
    second_rows = gt_start[g][pair] + y - gt_top[g][pair]
    totals = [torch.zeros(d.numel(), dtype=torch.int64).index_add_(0, pair, _popcount_rows(layer[first_rows]
                                                                                          & layer[second_rows]))
              for layer in layers]  # the shared rows of every pair: gathered, AND-ed, popcounted, summed
    return _assemble(det_counts, gt_counts, det_areas, gt_areas, (image, d_local, g_local), totals)


def _strip_counts(dets: list[RowBands], gts: list[RowBands], det_labels: list[Tensor], gt_labels: list[Tensor],
                  all_pairs: bool, dilation_ratio: float, reach: Reach | None = None) -> list[dict[str, Tensor]]:
    """:func:`crop_counts` with boundaries, of masks given as runs: each mask drawn into its own strips (its
    band x its words, :mod:`~nobg_metrics.ops.run_strips`) and eroded there; a pair counted on the words of its
    shared rows and shared columns only."""
    height, width = gts[0].height, gts[0].width
    det_counts, gt_counts = [len(d.tops) for d in dets], [len(g.tops) for g in gts]
    count, nd = sum(det_counts) + sum(gt_counts), sum(det_counts)
    owner, row, low, high = run_strips.pieces([*dets, *gts], width)
    layout = run_strips.strip_layout(owner, low, high, *[torch.tensor([v for stack in [*dets, *gts] for v in
                                                                       getattr(stack, name)], dtype=torch.int64)
                                                         for name in ("tops", "bottoms")])
    masks = run_strips.draw(owner, row, low, high, layout)
    eroded = run_strips.erode(owner, row, low, high, layout, dilation_radius(height, width, dilation_ratio))
    layers = [masks, eroded.bitwise_not_().bitwise_and_(masks)]
    areas = torch.zeros(count, dtype=torch.int64).index_add_(0, owner, (high - low).to(torch.int64))
    sums = torch.cat([torch.zeros(1, dtype=torch.int64), count_bits(layers[1][:, None, None]).cumsum(0)])
    bands = sums[layout.base + layout.length * layout.words] - sums[layout.base]
    top, bottom = layout.top, layout.top + layout.length - 1
    image, d_local, g_local, d, g, low, high = _pairs(det_counts, gt_counts, (top[:nd], bottom[:nd], top[nd:],
                                                      bottom[nd:]), None if all_pairs else (det_labels, gt_labels))
    g = g + nd
    if reach is not None:  # boundary IoU is min(mask IoU, band IoU) off crowd: either bound can rule a pair out
        crowd = torch.cat(reach.gt_crowd)[g - nd]
        kept = reachable(areas[d], areas[g], crowd, reach.floor) & (
            crowd | reachable(bands[d], bands[g], torch.zeros_like(crowd), reach.floor))
        chosen = kept.nonzero()[:, 0]
        image, d_local, g_local, d, g, low, high = (v[chosen] for v in (image, d_local, g_local, d, g, low, high))
    first, end = layout.first, layout.first + layout.words
    word_low, word_high = torch.maximum(first[d], first[g]), torch.minimum(end[d], end[g])
    words = (word_high - word_low).clamp_(min=0)
    # segments: one shared word of one pair, its shared rows consecutive in both masks' strips
    segments = int(words.sum())
    seg_pair = torch.repeat_interleave(torch.arange(d.numel()), words, output_size=segments)
    seg_word = word_low[seg_pair] + torch.arange(segments) - (words.cumsum(0) - words)[seg_pair]
    seg_low, seg_rows = low[seg_pair], (high - low)[seg_pair]
    seg_d, seg_g = layout.index(d[seg_pair], seg_low, seg_word), layout.index(g[seg_pair], seg_low, seg_word)
    elements = int(seg_rows.sum())
    seg = torch.repeat_interleave(torch.arange(segments), seg_rows, output_size=elements)
    step = torch.arange(elements) - (seg_rows.cumsum(0) - seg_rows)[seg]
    first_words, second_words, pair = seg_d[seg] + step, seg_g[seg] + step, seg_pair[seg]
    totals = [torch.zeros(d.numel(), dtype=torch.int64).index_add_(
        0, pair, count_bits((layer[first_words] & layer[second_words])[:, None, None])) for layer in layers]
    return _assemble(det_counts, gt_counts, [areas[:nd], bands[:nd]], [areas[nd:], bands[nd:]],
                     (image, d_local, g_local), totals)


def _pairs(det_counts: list[int], gt_counts: list[int], bands: tuple[Tensor, Tensor, Tensor, Tensor],
           labels: tuple[list[Tensor], list[Tensor]] | None) -> tuple[Tensor, ...]:
    """The (detection, gt) pairs of one image whose bands ``[top, bottom)`` share rows (and, with ``labels``,
    category): ``(image, d_local, g_local, d, g, low, high)``, the shared rows ``[low, high)``."""
    det_top, det_bottom, gt_top, gt_bottom = bands
    n, m = torch.tensor(det_counts, dtype=torch.int64), torch.tensor(gt_counts, dtype=torch.int64)
    det_offset, gt_offset = n.cumsum(0) - n, m.cumsum(0) - m
    image = torch.repeat_interleave(torch.arange(len(det_counts)), n * m)
    within = torch.arange(image.numel()) - ((n * m).cumsum(0) - n * m)[image]
    d_local, g_local = within // m[image].clamp(min=1), within % m[image].clamp(min=1)
    d, g = det_offset[image] + d_local, gt_offset[image] + g_local
    low, high = torch.maximum(det_top[d], gt_top[g]), torch.minimum(det_bottom[d], gt_bottom[g])
    keep = high > low
    if labels is not None:
        keep &= torch.cat(labels[0])[d] == torch.cat(labels[1])[g]
    chosen = keep.nonzero()[:, 0]  # host reads: free on CPU
    return tuple(values[chosen] for values in (image, d_local, g_local, d, g, low, high))


def _assemble(det_counts: list[int], gt_counts: list[int], det_areas: list[Tensor], gt_areas: list[Tensor],
              where: tuple[Tensor, Tensor, Tensor], totals: list[Tensor]) -> list[dict[str, Tensor]]:
    """Per image counts from the batch's areas (masks, then boundaries) and the pairs' intersections."""
    images, dmax, gmax = len(det_counts), max(det_counts), max(gt_counts)
    padded = [torch.zeros((images, dmax, gmax), dtype=torch.int64).index_put_(where, total) for total in totals]
    results, lo_d, lo_g = [], 0, 0
    for index in range(images):
        hi_d, hi_g = lo_d + det_counts[index], lo_g + gt_counts[index]
        out = {"det_area": det_areas[0][lo_d:hi_d], "gt_area": gt_areas[0][lo_g:hi_g],
               "inter": padded[0][index, :det_counts[index], :gt_counts[index]]}
        if len(totals) > 1:
            out.update(det_band=det_areas[1][lo_d:hi_d], gt_band=gt_areas[1][lo_g:hi_g],
                       band_inter=padded[1][index, :det_counts[index], :gt_counts[index]])
        results.append(out)
        lo_d, lo_g = hi_d, hi_g
    return results
