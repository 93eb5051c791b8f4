"""Compressed COCO RLE strings straight to their foreground runs: the strings of one image size decoded together
in a few passes over their characters (the fast path of ``nobg-metrics instances``; :mod:`.coco_rle` has the
format).

The decoding is :func:`~nobg_metrics.io.coco.rle_text.decode_runs` (numpy, torch-free: its notes have the method);
the runs come back as tensors.

Input this path does not take — a character outside ``'0'..'o'``, a string cut inside a value or empty, a value of
more than 6 characters, a negative count, counts that do not add up to ``height * width`` — is handed to
:func:`~nobg_metrics.io.coco.rle.decode_strings` and :func:`~nobg_metrics.io.coco.rle.check_counts`, which name
the fault (:class:`~nobg_metrics.io.errors.MalformedRle`), so the errors are the same as theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics.io.coco.rle import check_counts, decode_strings, rle_intervals
from nobg_metrics.io.coco.rle_text import ascii_strings, decode_runs


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
    encoded = ascii_strings(strings)
    found = decode_runs(encoded, height * width)
    if found is None:  # something to report, or an input this path leaves to the counts decoder
        counts, lengths = decode_strings(encoded)
        check_counts(counts, lengths, height, width)
        return rle_intervals(counts, lengths)
    owner, start, stop = found
    return torch.from_numpy(owner), torch.from_numpy(start), torch.from_numpy(stop)
