"""COCO run-length encoding (RLE) in torch: the compressed counts string, masks, area and box, as pycocotools has them.

A COCO RLE is ``{"size": [h, w], "counts": ...}``: the mask read in **column-major** order as alternating runs,
zeros first (a mask that starts with a one has a first count of 0). ``counts`` is either a list of ints
("uncompressed", the crowd annotations of COCO's files) or the string of pycocotools' ``rleToString``
(``common/maskApi.c``): each count, from the fourth on as the difference to the count two places before it, in a
LEB128-like code of 5 bits per character, ASCII 48-111, bit 0x20 "more characters follow", bit 0x10 of the last
character the sign.

Everything here works on many RLEs at once with tensor operations (no Python loop over characters or runs):
:func:`decode_strings` turns the strings into counts, :func:`rle_intervals` the counts into foreground runs and
:func:`counts_to_masks` into ``(N, H, W)`` bool masks (drawn by :mod:`.coco_intervals`), :func:`rle_area` and
:func:`rle_bbox` are pycocotools' ``area`` and ``toBbox``. :func:`encode` (a mask to a compressed RLE) is for writing
result files and for tests.

Malformed input (characters outside 48-111, a value cut off, negative counts, counts that do not add up to
``h * w``) raises :class:`MalformedRle` naming the RLE's position; pycocotools would read past the string, wrap
the count, or leave the mask's tail uninitialised there. Values of more than 6 characters (|value| >= 2^29,
images of 2^29 = 537 M pixels and more) are refused: pycocotools' ``int`` shifts overflow there.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics.io.coco.intervals import intervals_to_masks
from nobg_metrics.io.coco.rle_text import MAX_CHARS_PER_VALUE, ascii_strings
from nobg_metrics.io.errors import MalformedRle


def _segment_starts(lengths: Tensor) -> Tensor:
    """Offsets of ``N`` consecutive segments of the given lengths in their concatenation: ``(N,)`` int64."""
    return torch.cumsum(lengths, 0) - lengths


def _segment_cumsum(values: Tensor, segment: Tensor, starts: Tensor) -> Tensor:
    """Cumulative sums of ``values`` restarting at each segment (``segment``: the segment of each element,
    ``starts``: the offset of each segment)."""
    if values.numel() == 0:
        return values.clone()
    total = torch.cumsum(values, 0)
    before = total - values  # the running sum before each element
    return total - before[starts.clamp(max=values.numel() - 1)][segment]  # (an empty segment's start: unused)


def _string_of(position: Tensor, chars_per_string: Tensor) -> int:
    """The string that holds character ``position`` (for error messages)."""
    return int(torch.searchsorted(torch.cumsum(chars_per_string, 0), position, right=True))


def decode_strings(strings: Sequence[str | bytes]) -> tuple[Tensor, Tensor]:
    """The counts of many compressed RLE strings (pycocotools ``rleFrString``), decoded together.

    Args:
        strings: ``N`` counts strings (``str`` or ``bytes``).

    Returns:
        ``(counts, lengths)``: ``counts`` ``(sum(lengths),)`` int64, the counts of every RLE one after the other;
        ``lengths`` ``(N,)`` int64, how many counts each has.

    Raises:
        MalformedRle: a character outside ``'0'..'o'``, a value cut off at the end of its string, a value of
            more than 6 characters, or a negative count.

    Examples:
        >>> counts, lengths = decode_strings(["52203", "0o1"])
        >>> counts.tolist(), lengths.tolist()
        ([5, 2, 2, 2, 5, 0, 63], [5, 2])
    """
    encoded = ascii_strings(strings)
    n = len(encoded)
    lengths = [len(s) for s in encoded]
    chars_per_string = torch.tensor(lengths, dtype=torch.int64)
    total = sum(lengths)
    if n == 0 or total == 0:
        return torch.zeros(0, dtype=torch.int64), torch.zeros(n, dtype=torch.int64)
    raw = torch.frombuffer(bytearray(b"".join(encoded)), dtype=torch.uint8)
    code = raw - 48  # uint8: characters below '0' wrap past 63
    bad = code > 63
    if bool(bad.any()):
        raise MalformedRle(_string_of(bad.to(torch.uint8).argmax(), chars_per_string),
                           "the counts string holds a character outside '0'..'o' (ASCII 48-111)")
    ends_value = (code & 0x20) == 0
    last_of_string = torch.cumsum(chars_per_string, 0) - 1
    nonempty = chars_per_string > 0
    cut = nonempty & ~ends_value[last_of_string.clamp(min=0)]
    if bool(cut.any()):
        raise MalformedRle(int(cut.to(torch.uint8).argmax()), "the counts string ends inside a value")
    ends = torch.nonzero(ends_value).flatten()
    values = ends.numel()
    value_starts = torch.empty_like(ends)
    value_starts[0] = 0
    value_starts[1:] = ends[:-1] + 1
    chars_per_value = ends - value_starts + 1
    if bool((chars_per_value > MAX_CHARS_PER_VALUE).any()):
        raise MalformedRle(_string_of(ends[(chars_per_value > MAX_CHARS_PER_VALUE).to(torch.uint8).argmax()],
                                      chars_per_string),
                           f"a value of more than {MAX_CHARS_PER_VALUE} characters (a count >= 2^29)")
    low = (code & 0x1F).to(torch.int32)
    x = low[value_starts]
    longer = torch.nonzero(chars_per_value > 1).flatten()  # the values of 2 characters or more, fewer each round
    k = 1
    while longer.numel():  # x |= (c & 0x1f) << 5k for the k-th character of each value that has one
        x.index_add_(0, longer, low[value_starts[longer] + k] << (5 * k))
        k += 1
        longer = longer[chars_per_value[longer] > k]
    negative = (code[ends] & 0x10) != 0
    x = x.to(torch.int64)
    x -= torch.where(negative, torch.ones_like(x) << (5 * chars_per_value), 0)
    # values per string: the ends inside each string
    ends_before = torch.zeros(n + 1, dtype=torch.int64)
    ends_before[1:] = torch.searchsorted(ends, last_of_string, right=True)
    counts_per_string = ends_before[1:] - ends_before[:-1]
    first_value = ends_before[:-1]
    starting = counts_per_string > 0
    starts = first_value[starting]  # the first value of each string that has one
    # the parity of each value's index in its string: the global index's, flipped where its string starts odd
    flip = torch.zeros(values, dtype=torch.int64)
    phase = starts & 1
    flip.index_add_(0, starts, phase - torch.cat([phase.new_zeros(1), phase[:-1]]))
    odd_j = ((torch.arange(values) & 1) ^ torch.cumsum(flip, 0)) == 1
    first = torch.zeros(values, dtype=torch.bool)
    first[starts] = True
    # if (m > 2) x += cnts[m-2]: odd counts are running sums of the odd values, even ones of the even values
    # from the third on; one cumsum per parity, each string's sums started over by subtracting what came before
    counts = torch.empty_like(x)
    for lane in (odd_j, ~odd_j & ~first):
        parts = torch.where(lane, x, 0)
        run = torch.cumsum(parts, 0)
        before = run[starts] - parts[starts]  # the lane's total before each string
        parts[starts] -= before - torch.cat([before.new_zeros(1), before[:-1]])
        counts = torch.where(lane, torch.cumsum(parts, 0), counts)
    counts = torch.where(first, x, counts)
    if bool((counts < 0).any()):
        position = (counts < 0).to(torch.uint8).argmax()
        raise MalformedRle(int(torch.searchsorted(ends_before[1:], position, right=True)), "a negative count")
    return counts, counts_per_string


def check_counts(counts: Tensor, lengths: Tensor, height: int, width: int) -> None:
    """Raise :class:`MalformedRle` unless every RLE's counts are >= 0 and add up to ``height * width``."""
    n = lengths.numel()
    if n == 0:
        return
    if bool((counts < 0).any()):
        owner = torch.repeat_interleave(torch.arange(n), lengths)
        raise MalformedRle(int(owner[(counts < 0).to(torch.uint8).argmax()]), "a negative count")
    owner = torch.repeat_interleave(torch.arange(n), lengths)
    totals = torch.zeros(n, dtype=torch.int64).index_add_(0, owner, counts)
    wrong = totals != height * width
    if bool(wrong.any()):
        index = int(wrong.to(torch.uint8).argmax())
        raise MalformedRle(index, f"its counts add up to {int(totals[index])} pixels, not {height}x{width} = "
                                  f"{height * width}")


def rle_intervals(counts: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The foreground runs of ``N`` RLEs as ``(rle, start, stop)`` column-major intervals (runs of length 0 left
    out); the counts must be checked (:func:`check_counts`)."""
    n = lengths.numel()
    owner = torch.repeat_interleave(torch.arange(n), lengths)
    j = torch.arange(counts.numel()) - _segment_starts(lengths)[owner]
    stop = _segment_cumsum(counts, owner, _segment_starts(lengths))
    foreground = (j % 2 == 1) & (counts > 0)  # runs alternate 0, 1, 0, ...
    return owner[foreground], (stop - counts)[foreground], stop[foreground]


def counts_to_masks(counts: Tensor, lengths: Tensor, height: int, width: int) -> Tensor:
    """Masks from the counts of ``N`` RLEs of one size (pycocotools ``decode``).

    Args:
        counts: ``(sum(lengths),)`` int64, the counts of every RLE one after the other.
        lengths: ``(N,)`` int64, the number of counts of each.
        height, width: the masks' size; each RLE's counts must add up to ``height * width``.

    Returns:
        ``(N, height, width)`` bool (contiguous).

    Examples:
        >>> counts_to_masks(torch.tensor([1, 2, 3]), torch.tensor([3]), 2, 3).int().tolist()
        [[[0, 1, 0], [1, 0, 0]]]
    """
    check_counts(counts, lengths, height, width)
    return intervals_to_masks(*rle_intervals(counts, lengths), lengths.numel(), height, width)


def mask_counts(mask: Tensor) -> Tensor:
    """The uncompressed RLE counts of one ``(H, W)`` mask (pycocotools ``rleEncode``): int64, zeros first.

    Examples:
        >>> mask_counts(torch.tensor([[0, 1, 0], [1, 0, 0]], dtype=torch.bool)).tolist()
        [1, 2, 3]
    """
    flat = mask.to(torch.bool).t().reshape(-1)
    if flat.numel() == 0:
        return torch.zeros(1, dtype=torch.int64)
    change = torch.nonzero(flat[1:] != flat[:-1]).flatten() + 1
    edges = torch.cat([change.new_zeros(1), change, change.new_full((1,), flat.numel())])
    counts = edges[1:] - edges[:-1]
    if bool(flat[0]):
        counts = torch.cat([counts.new_zeros(1), counts])
    return counts


def counts_to_string(counts: Sequence[int] | Tensor) -> str:
    """pycocotools' ``rleToString``: the compressed form of a list of counts.

    Examples:
        >>> counts_to_string([5, 2, 2, 2, 5])
        '52203'
    """
    values = counts.tolist() if isinstance(counts, Tensor) else [int(c) for c in counts]
    out: list[str] = []
    for i, count in enumerate(values):  # one RLE's runs: writing files and tests only
        x = count - values[i - 2] if i > 2 else count  # if (i > 2) x -= cnts[i-2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


def encode(mask: Tensor) -> dict[str, object]:
    """A compressed RLE of one ``(H, W)`` mask, as pycocotools' ``encode`` writes it (``counts`` a ``str``).

    Examples:
        >>> encode(torch.tensor([[0, 1, 0], [1, 0, 0]], dtype=torch.bool))
        {'size': [2, 3], 'counts': '123'}
    """
    height, width = mask.shape
    return {"size": [int(height), int(width)], "counts": counts_to_string(mask_counts(mask))}


def rle_area(counts: Tensor, lengths: Tensor) -> Tensor:
    """pycocotools' ``area``: the sum of the odd-position counts of each RLE, ``(N,)`` int64.

    Examples:
        >>> rle_area(torch.tensor([1, 2, 3, 0, 6]), torch.tensor([3, 2])).tolist()
        [2, 6]
    """
    n = lengths.numel()
    owner = torch.repeat_interleave(torch.arange(n), lengths)
    j = torch.arange(counts.numel()) - _segment_starts(lengths)[owner]
    return torch.zeros(n, dtype=torch.int64).index_add_(0, owner, torch.where(j % 2 == 1, counts, 0))


def rle_bbox(counts: Tensor, lengths: Tensor, height: int, width: int) -> Tensor:
    """pycocotools' ``toBbox`` (``rleToBbox`` of pycocotools 2.0.8+): ``[x, y, w, h]`` per RLE, ``(N, 4)`` float64.

    Only the first ``2 * (m // 2)`` counts of an RLE of ``m`` counts are read; foreground runs of length 0 are
    skipped; a run that spans two columns makes the box full height. An RLE without counts gives ``[0, 0, 0, 0]``;
    one whose foreground runs are all empty gives pycocotools' unsigned wrap-around ``[w, h, 2^32 - w + 1,
    2^32 - h + 1]``.

    Examples:
        >>> rle_bbox(torch.tensor([1, 2, 3]), torch.tensor([3]), 2, 3).tolist()
        [[0.0, 0.0, 2.0, 2.0]]
    """
    n = lengths.numel()
    used = (lengths // 2) * 2  # m = ((siz)(m/2))*2
    owner = torch.repeat_interleave(torch.arange(n), lengths)
    first = _segment_starts(lengths)
    j = torch.arange(counts.numel()) - first[owner]
    start = _segment_cumsum(counts, owner, first) - counts  # pixels before each run
    run = (j % 2 == 1) & (j < used[owner]) & (counts > 0)
    stop = start + counts - 1
    x_start, y_start = start // height, start % height
    x_end, y_end = stop // height, stop % height
    big = torch.iinfo(torch.int64).max
    xs = torch.full((n,), width, dtype=torch.int64).scatter_reduce(0, owner, torch.where(run, x_start, big), "amin")
    xe = torch.zeros(n, dtype=torch.int64).scatter_reduce(0, owner, torch.where(run, x_end, -1), "amax")
    spans = torch.zeros(n, dtype=torch.int64).scatter_reduce(0, owner, (run & (x_start < x_end)).long(), "amax")
    one_column = run & (x_start == x_end)
    ys = torch.full((n,), height, dtype=torch.int64).scatter_reduce(
        0, owner, torch.where(one_column, y_start, big), "amin")
    ye = torch.zeros(n, dtype=torch.int64).scatter_reduce(0, owner, torch.where(one_column, y_end, -1), "amax")
    ys = torch.where(spans > 0, 0, ys)
    ye = torch.where(spans > 0, height - 1, ye)
    wrap = 1 << 32  # bb[2] = xe - xs + 1 in uint arithmetic
    box = torch.stack([xs, ys, (xe - xs + 1) % wrap, (ye - ys + 1) % wrap], 1).to(torch.float64)
    return torch.where((used == 0)[:, None], torch.zeros_like(box), box)
