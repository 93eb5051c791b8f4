"""Masks given as row-major runs, drawn bit-packed into *strips*: one 64-pixel column of one mask's row band.

A mask of an ``H x W`` image occupies the rows ``[top, bottom)`` and the 64-bit words ``[first, last)`` of its rows
(pixel ``x`` at bit ``x % 64`` of word ``x // 64``, as :func:`~nobg_metrics.ops.morphology.pack_bits` packs). Its
strip of word ``w`` holds that word of its rows ``top .. bottom - 1`` then one zero word; the strips of all masks
lie one after the other on one axis (:class:`StripLayout`, after one leading zero word), so a mask costs its band
times its own width in words, not the image's, and the rows of one column are consecutive.

The erosion by a :math:`(2r+1)^2` square with the image's outside as background (zero padding, as
:func:`~nobg_metrics.ops.morphology.erode`) is separable: along a row, a run ``[s, e)`` of one row erodes to
``[s + r, e - r)`` (the image's edges are background, so a run touching them erodes from them too; runs meeting
end to start are joined first); down the columns, a pixel stays where the ``2r + 1`` rows around it keep it: an
AND of consecutive words of a strip, and a window reaching past the band meets a strip's zero word (:func:`erode`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["StripLayout", "draw", "erode", "pieces", "row_runs", "strip_layout"]


def row_runs(owner: Tensor, start: Tensor, stop: Tensor, width: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Row-major runs ``[start, stop)`` of positions ``row * width + col`` (sorted by ``(owner, start)``, not
    overlapping within an owner) cut at the rows' ends, those that meet end to start joined first.

    Returns:
        ``(owner, row, low, high)``: :math:`(P,)` int64 each, the pixels ``[low, high)`` of row ``row``.

    Examples:
        >>> row_runs(torch.tensor([0, 0, 1]), torch.tensor([1, 3, 2]), torch.tensor([3, 6, 4]), 4)
        (tensor([0, 1, 0]), tensor([0, 0, 1]), tensor([1, 2, 0]), tensor([4, 4, 2]))
    """
    if owner.numel() > 1:
        join = start[1:] == stop[:-1]
        if bool(join.any()) and bool(join.logical_and_(owner[1:] == owner[:-1]).any()):
            # runs meeting end to start: one run (a mask's pixels, not its coding)
            head = torch.cat([torch.ones(1, dtype=torch.bool), ~join])
            last = torch.cat([head[1:], torch.ones(1, dtype=torch.bool)])
            owner, start, stop = owner[head], start[head], stop[last]
    row = start // width
    low = start - row * width
    high = stop - row * width
    spans = torch.nonzero(high > width).flatten()
    if spans.numel():  # runs over several rows: their first row here, one piece per further row after
        count = (stop.index_select(0, spans) - 1) // width - row.index_select(0, spans)
        total = int(count.sum())
        which = torch.repeat_interleave(spans, count, output_size=total)
        k = torch.arange(1, total + 1) - torch.repeat_interleave(torch.cumsum(count, 0) - count, count,
                                                                 output_size=total)
        owner = torch.cat([owner, owner.index_select(0, which)])
        high = torch.cat([high.clamp_(max=width), (stop.index_select(0, which) - start.index_select(0, which)
                                                   + low.index_select(0, which) - k * width).clamp_(max=width)])
        low = torch.cat([low, torch.zeros_like(which)])
        row = torch.cat([row, row.index_select(0, which) + k])
    return owner, row, low, high


def pieces(stacks: list, width: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """:func:`row_runs` of several run-backed :class:`~nobg_metrics.ops.row_bands.RowBands`, owners numbered
    across them (the masks of ``stacks[0]`` first)."""
    owners, starts, stops, offset = [], [], [], 0
    for stack in stacks:
        owner, start, stop = stack.runs
        owners.append(owner + offset)
        starts.append(start)
        stops.append(stop)
        offset += len(stack.tops)
    start, stop = torch.cat(starts), torch.cat(stops)
    if stacks and stacks[0].height * width < 2**31 - 1:  # the positions' arithmetic in int32: half the memory traffic
        start, stop = start.to(torch.int32), stop.to(torch.int32)
    return row_runs(torch.cat(owners), start, stop, width)


@dataclass
class StripLayout:
    """Where the strips of ``K`` masks lie (module notes); :math:`(K,)` int64 each.

    Attributes:
        base: the index of a mask's first strip (word ``first``, row ``top``).
        top: the band's first row.
        length: the band's rows plus the zero word (0 for an empty mask).
        first: the first word of the mask's columns.
        words: its number of words (0 for an empty mask).
        total: the axis' length.
    """

    base: Tensor
    top: Tensor
    length: Tensor
    first: Tensor
    words: Tensor
    total: int

    def origin(self) -> Tensor:
        """:math:`(K,)`: where word 0 of row 0 of each mask would lie."""
        return self.base - self.first * self.length - self.top

    def index(self, owner: Tensor, row: Tensor, word: Tensor) -> Tensor:
        """Where word ``word`` of row ``row`` of mask ``owner`` lies (each :math:`(P,)` int64)."""
        return self.origin().index_select(0, owner).add_(row).addcmul_(word, self.length.index_select(0, owner))


def strip_layout(owner: Tensor, low: Tensor, high: Tensor, top: Tensor, bottom: Tensor) -> StripLayout:
    """The strips of masks from their :func:`row_runs` pieces and their bands ``[top, bottom)`` (:math:`(K,)`
    int64; an empty mask: ``[0, 0)``).

    Examples:
        >>> layout = strip_layout(torch.tensor([1, 1]), torch.tensor([60, 0]), torch.tensor([70, 5]),
        ...                       torch.tensor([0, 2]), torch.tensor([0, 4]))
        >>> layout.base.tolist(), layout.length.tolist(), layout.first.tolist(), layout.words.tolist(), layout.total
        ([1, 1], [0, 3], [0, 0], [0, 2], 7)
    """
    count = top.numel()
    big = torch.iinfo(low.dtype).max
    first = (torch.full((count,), big, dtype=low.dtype).scatter_reduce_(0, owner, low, "amin") >> 6).long()
    last = (((torch.zeros(count, dtype=high.dtype).scatter_reduce_(0, owner, high, "amax") - 1) >> 6) + 1).long()
    empty = bottom <= top
    first.masked_fill_(empty, 0)
    length = torch.where(empty, 0, bottom - top + 1)
    words = torch.where(empty, 0, last - first)
    size = length * words
    base = torch.cumsum(size, 0) - size + 1
    return StripLayout(base, top, length, first, words, int(size.sum()) + 1)


def draw(owner: Tensor, row: Tensor, low: Tensor, high: Tensor, layout: StripLayout) -> Tensor:
    """The pieces ``[low, high)`` (not overlapping within an owner, inside its layout) drawn into the strips:
    :math:`(total,)` int64.

    A piece sets the bits from ``low % 64`` of its first word and those below ``(high - 1) % 64 + 1`` of its last
    (added: the pieces of a mask are disjoint, so a sum is a union); the words between are filled.

    Examples:
        >>> args = torch.tensor([1, 1]), torch.tensor([2, 3]), torch.tensor([60, 0]), torch.tensor([70, 5])
        >>> words = draw(*args, strip_layout(*args[::2], *args[3:], torch.tensor([0, 2]), torch.tensor([0, 4])))
        >>> [hex(w & 0xFFFFFFFFFFFFFFFF) for w in words.tolist()]
        ['0x0', '0xf000000000000000', '0x1f', '0x0', '0x3f', '0x0', '0x0']
    """
    out = torch.zeros(layout.total, dtype=torch.int64)
    if owner.numel() == 0:
        return out
    word = low >> 6
    span = ((high - 1) >> 6).sub_(word)  # words after the first
    small = torch.int32 if layout.total < 2**31 - 1 else torch.int64  # the indices' dtype
    length = layout.length.to(small).index_select(0, owner)
    at = layout.origin().to(small).index_select(0, owner).add_(row).addcmul_(word, length)  # the first word's index
    head = torch.full(low.shape, -1, dtype=torch.int64).bitwise_left_shift_(low & 63)
    tail = torch.full(high.shape, -2, dtype=torch.int64).bitwise_left_shift_((high - 1) & 63).bitwise_not_()
    same = span == 0
    out.index_add_(0, at, torch.where(same, head & tail, head))
    apart = torch.nonzero(~same).flatten()
    if apart.numel():
        span, length, at = span.index_select(0, apart), length.index_select(0, apart), at.index_select(0, apart)
        out.index_add_(0, at + span * length, tail.index_select(0, apart))
        wide = torch.nonzero(span > 1).flatten()
        if wide.numel():  # the words between a piece's first and last: all set
            count = span.index_select(0, wide) - 1
            total = int(count.sum())
            which = torch.repeat_interleave(wide, count, output_size=total)
            k = torch.arange(1, total + 1) - torch.repeat_interleave(torch.cumsum(count, 0) - count, count,
                                                                     output_size=total)
            out.index_fill_(0, at.index_select(0, which) + k * length.index_select(0, which), -1)
    return out


def erode(owner: Tensor, row: Tensor, low: Tensor, high: Tensor, layout: StripLayout, radius: int) -> Tensor:
    """The erosion by a :math:`(2r+1)^2` square (zero padding) of the masks of :func:`row_runs` pieces, in the
    strips of ``layout`` (module notes): :math:`(total,)` int64.

    Examples:
        >>> from nobg_metrics.ops.morphology import erode as dense_erode
        >>> m = torch.zeros(1, 7, 9, dtype=torch.bool); m[0, :6, 1:] = True; m[0, 3, 4] = False
        >>> flat = m.flatten().nonzero()[:, 0]; runs = row_runs(torch.zeros_like(flat), flat, flat + 1, 9)
        >>> layout = strip_layout(runs[0], *runs[2:], torch.tensor([0]), torch.tensor([6]))
        >>> eroded = erode(*runs, layout, 1)
        >>> [int(eroded[layout.index(torch.tensor([0]), torch.tensor([y]), torch.tensor([0]))]) for y in range(6)]
        [0, 252, 196, 196, 196, 0]
        >>> [sum(1 << x for x in range(9) if dense_erode(m, 1)[0, y, x]) for y in range(6)]
        [0, 252, 196, 196, 196, 0]
    """
    keep = torch.nonzero(high - low > 2 * radius).flatten()
    eroded = draw(owner.index_select(0, keep), row.index_select(0, keep), low.index_select(0, keep) + radius,
                  high.index_select(0, keep) - radius, layout)
    span = 2 * radius + 1
    if span > 1 and eroded.numel() >= span:  # AND of the 2r + 1 consecutive words (a doubling of the span)
        done = 1
        while done < span:
            step = min(done, span - done)
            eroded = eroded[:eroded.numel() - step] & eroded[step:]
            done += step
        eroded = torch.nn.functional.pad(eroded, (radius, radius))
    elif span > 1:
        eroded = torch.zeros_like(eroded)
    return eroded
