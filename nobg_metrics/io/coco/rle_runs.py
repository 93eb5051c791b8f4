"""Compressed COCO RLE strings straight to their foreground runs: the strings of one image size decoded together
in a few passes over their characters (the fast path of ``nobg-metrics instances``; :mod:`.coco_rle` has the
format).

Each character holds 5 bits (``c - 48``), bit 0x20 set while the value goes on; the last character of a value is
read as a signed 5-bit digit (bit 0x10 the sign), so the value's sign needs no second pass. From the fourth on, a
count is its value plus the count two places before it: the counts of a string are two running sums, one over
its even and one over its odd places. Each string's values are laid out as rows of (even place, odd place) —
a string with an odd number of values gets one zero after its last — so that one :func:`torch.cumsum` down the
two columns gives both running sums, started over at each string's first row by subtracting the previous string's
column sums there. A second running sum over the counts gives the run ends; the odd places are the foreground
runs.

Input this path does not take — a character outside ``'0'..'o'``, a string cut inside a value or empty, a value of
more than 6 characters, a negative count, counts that do not add up to ``height * width`` — is handed to
:func:`~nobg_metrics.io.coco.rle.decode_strings` and :func:`~nobg_metrics.io.coco.rle.check_counts`, which name
the fault (:class:`~nobg_metrics.io.errors.MalformedRle`), so the errors are the same as theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics.io.coco.rle import MAX_CHARS_PER_VALUE, check_counts, decode_strings, rle_intervals
from nobg_metrics.io.errors import MalformedRle


def string_runs(strings: Sequence[str | bytes], height: int, width: int) -> tuple[Tensor, Tensor, Tensor]:
    """The foreground runs of ``N`` compressed RLE strings of one ``height x width`` size.

    Args:
        strings: ``N`` counts strings (``str`` or ``bytes``), pycocotools' ``rleToString`` form.
        height, width: the masks' size; each string's counts must add up to ``height * width``.

    Returns:
        ``(owner, start, stop)``: :math:`(K,)` int64 column-major runs ``[start, stop)`` of positions
        ``col * height + row``, sorted by ``(owner, start)``, none empty; what
        :func:`~nobg_metrics.io.coco.rle.rle_intervals` gives from the decoded counts.

    Raises:
        MalformedRle: as :func:`~nobg_metrics.io.coco.rle.decode_strings` and
            :func:`~nobg_metrics.io.coco.rle.check_counts`.

    Examples:
        >>> [t.tolist() for t in string_runs(["52203", "0`0"], 4, 4)]  # counts [5, 2, 2, 2, 5] and [0, 16]
        [[0, 0, 1], [5, 9, 0], [7, 11, 16]]
    """
    encoded = []
    for index, string in enumerate(strings):
        try:
            encoded.append(string.encode("ascii") if isinstance(string, str) else bytes(string))
        except UnicodeEncodeError:
            raise MalformedRle(index, "the counts string holds a character outside '0'..'o' (ASCII 48-111)") \
                from None
    found = _decode(encoded, height * width)
    if found is None:  # something to report, or an input this path leaves to the counts decoder
        counts, lengths = decode_strings(encoded)
        check_counts(counts, lengths, height, width)
        return rle_intervals(counts, lengths)
    return found


def _decode(encoded: list[bytes], pixels: int) -> tuple[Tensor, Tensor, Tensor] | None:
    """:func:`string_runs` on well-formed strings; ``None`` where a check fails (module notes)."""
    n = len(encoded)
    lengths = torch.tensor([len(s) for s in encoded], dtype=torch.int64)
    code = torch.frombuffer(bytearray(b"".join(encoded)), dtype=torch.uint8)
    if n == 0 or code.numel() == 0 or bool((lengths == 0).any()):
        return None
    low, high = torch.aminmax(code)
    if int(low) < 48 or int(high) > 111:
        return None
    code = code.to(torch.int16).sub_(48)
    ends = torch.nonzero(code < 32).flatten()  # the last character of each value (bit 0x20 clear)
    if ends.numel() == 0 or int(ends[-1]) != code.numel() - 1:
        return None
    last = code.index_select(0, ends)
    x = last.sub_((last & 0x10) << 1).to(torch.int64)  # the last character: 5 bits, signed
    before = torch.diff(ends, prepend=ends.new_full((1,), -1)) - 1  # characters before the last
    longer = torch.nonzero(before).flatten()
    if longer.numel():  # x = c0 + c1 << 5 + ... + last << 5k, the first characters unsigned
        chars = before.index_select(0, longer)
        most = int(chars.max())
        if most >= MAX_CHARS_PER_VALUE:
            return None
        lead = ends.index_select(0, longer) - chars
        value = x.index_select(0, longer) << (5 * chars)
        for k in range(most):
            some = torch.nonzero(chars > k).flatten()
            digit = code.index_select(0, lead.index_select(0, some) + k).to(torch.int64) - 32
            value.index_add_(0, some, digit << (5 * k))
        x.index_copy_(0, longer, value)
    values = torch.diff(torch.searchsorted(ends, torch.cumsum(lengths, 0)), prepend=lengths.new_zeros(1))
    if bool((values == 0).any()):
        return None
    first = torch.cumsum(values, 0) - values
    padded = values + (values & 1)  # rows of (even place, odd place); an odd string gets one zero
    pad_first = torch.cumsum(padded, 0) - padded
    rows = padded // 2
    total = int(padded.sum())
    at = torch.arange(x.numel()) + torch.repeat_interleave(pad_first - first, values, output_size=x.numel())
    grid = torch.zeros(total, dtype=torch.int64).index_copy_(0, at, x)
    first_x = x.index_select(0, first)
    grid[pad_first] = 0  # the first count is not a running sum (the third starts the even one)
    # if (m > 2) x += cnts[m-2]: a running sum per column, started over at each string's first row
    row_last = torch.cumsum(rows, 0) - 1
    at_end = torch.cumsum(grid.view(-1, 2), 0).index_select(0, row_last)
    string_sums = torch.diff(at_end, dim=0, prepend=at_end.new_zeros((1, 2)))
    grid.view(-1, 2)[row_last[:-1] + 1] -= string_sums[:-1]
    counts = torch.cumsum(grid.view(-1, 2), 0)
    flat = counts.view(-1)
    flat[pad_first] = first_x
    flat[(pad_first + values)[(values & 1) == 1]] = 0  # the padding
    if bool((flat < 0).any()):
        return None
    owner = torch.repeat_interleave(torch.arange(n), rows, output_size=total // 2)
    position = torch.cumsum(flat, 0)  # run ends, running on across the strings (each adds up to `pixels`)
    if bool((position.index_select(0, pad_first + padded - 1) != (torch.arange(n) + 1) * pixels).any()):
        return None
    stop = position.view(-1, 2)[:, 1] - owner * pixels
    length = counts[:, 1]
    keep = torch.nonzero(length).flatten()
    stop = stop.index_select(0, keep)
    return owner.index_select(0, keep), stop - length.index_select(0, keep), stop
