"""Compressed COCO RLE strings straight to their foreground runs with numpy only: the strings of one image size
decoded together in a few passes over their characters. Importable without torch: ``nobg-metrics instances``
decodes the results file in a reading process that never loads torch (:mod:`~nobg_metrics.io.coco.rle_runs` gives
the same runs as tensors; :mod:`~nobg_metrics.io.coco.rle` has the format).

Each character holds 5 bits (``c - 48``), bit 0x20 set while the value goes on; the last character of a value is
read as a signed 5-bit digit (bit 0x10 the sign), so the value's sign needs no second pass, and a longer value is
built from its last character down (Horner's rule; few values have more than one). From the fourth on, a count is
its value plus the count two places before it: the counts of a string are two running sums, one over its even and
one over its odd places. Each string's values are laid out as rows of (even place, odd place) — a string with an
odd number of values gets one zero after its last — so that one running sum down the two columns gives both,
started over at each string's first row by subtracting the previous string's column sums there. A second running
sum over the counts gives the run ends, each string's from 0 (``height * width`` subtracted at every string's first
count: the strings before add up to that each, which the end of every string checks); the odd places are the
foreground runs, a run's string the string of its row.

The passes are numpy's on the bytes of all strings joined: the arrays are those of one image, where torch's cost per
operation was most of the time.

Input this path does not take — a character outside ``'0'..'o'``, a string cut inside a value or empty, a value of
more than :data:`MAX_CHARS_PER_VALUE` characters, a negative count, counts that do not add up to ``height * width``
— gives ``None``: the caller hands it to the counts decoder, which names the fault.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nobg_metrics.io.errors import MalformedRle

MAX_CHARS_PER_VALUE = 6
"""The longest value code read: 6 characters hold 30 bits (maskApi.c's ``int`` shift is exact up to there)."""


def ascii_strings(strings: Sequence[str | bytes]) -> list[bytes]:
    """COCO's compressed ``counts`` strings as bytes, or :class:`MalformedRle` naming the first that is not ASCII."""
    encoded = []
    for index, string in enumerate(strings):
        try:
            encoded.append(string.encode("ascii") if isinstance(string, str) else bytes(string))
        except UnicodeEncodeError:
            raise MalformedRle(index, "the counts string holds a character outside '0'..'o' (ASCII 48-111)") \
                from None
    return encoded


def decode_runs(encoded: list[bytes], pixels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The foreground runs ``(owner, start, stop)`` of well-formed compressed strings of ``pixels`` positions each,
    as numpy int64 arrays (what :func:`~nobg_metrics.io.coco.rle_runs.string_runs` returns as tensors); ``None``
    where a check fails: the caller hands such strings to the counts decoder, which names the fault.

    Examples:
        >>> [a.tolist() for a in decode_runs([b"52203", b"0`0"], 16)]  # counts [5, 2, 2, 2, 5] and [0, 16]
        [[0, 0, 1], [5, 9, 0], [7, 11, 16]]
        >>> decode_runs([b"52"], 16) is None  # counts 5, 2 add up to 7, not 16
        True
    """
    n = len(encoded)
    if n == 0:
        return None
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    string_end = np.cumsum(lengths)
    code = np.frombuffer(b"".join(encoded), dtype=np.uint8) - np.uint8(48)  # below '0' wraps round to >= 208
    if code.size == 0 or int(code.max()) > 63:
        return None
    last = code < 32  # the last character of each value (bit 0x20 clear)
    if not last[string_end - 1].all():  # a string cut inside a value (an empty one is caught below)
        return None
    ends = np.flatnonzero(last)
    x = code[ends].astype(np.int64)
    x ^= 16
    x -= 16  # the last character: 5 bits, signed
    more = np.flatnonzero(~last)  # characters that a value goes on after
    values = lengths - np.diff(np.searchsorted(more, string_end), prepend=0)  # per string
    if more.size:  # x = c0 + c1 << 5 + ... + last << 5k: Horner's rule from the last character down
        tail = np.flatnonzero(last[more + 1])  # the character before a value's last, j-th of `more`
        longer = more[tail] - tail  # that value's place (the values ended before it)
        tail = more[tail]
        value = (x[longer] << 5) + (code[tail] & 31)
        chars, going = 2, np.flatnonzero(~last[tail - 1])  # (index -1: the last character, a value's last)
        while going.size:
            chars += 1
            if chars > MAX_CHARS_PER_VALUE:
                return None
            value[going] = (value[going] << 5) + (code[tail[going] - (chars - 2)] & 31)
            going = going[~last[tail[going] - (chars - 1)]]
        x[longer] = value
    if not values.all():  # an empty string
        return None
    odd = np.flatnonzero(values & 1)
    first = np.cumsum(values) - values
    padded = values
    if odd.size:  # rows of (even place, odd place): an odd string gets one zero after its last value
        x = np.insert(x, first[odd] + values[odd], 0)
        padded = values + (values & 1)
        first = np.cumsum(padded) - padded
    grid = x.reshape(-1, 2)
    first_x = x[first]
    x[first] = 0  # the first count is not a running sum (the third starts the even one)
    # if (m > 2) x += cnts[m-2]: a running sum per column, started over at each string's first row
    row_first = first >> 1
    grid[row_first[1:]] -= np.add.reduceat(grid, row_first, axis=0)[:-1]
    np.cumsum(grid, axis=0, out=grid)
    x[first] = first_x
    if odd.size:
        x[first[odd] + values[odd]] = 0  # the padding
    if int(x.min()) < 0:
        return None
    x[first[1:]] -= pixels  # each string's positions from 0: the strings before it add up to `pixels` each
    position = np.cumsum(x)  # run ends
    if bool((position[first + padded - 1] != pixels).any()):  # checked after the subtraction: each string alone
        return None
    length = grid[:, 1]
    keep = np.flatnonzero(length)
    stop = position[1::2][keep]
    owner = np.repeat(np.arange(n), padded >> 1)[keep]  # each string's rows, then the rows holding a run
    return owner, stop - length[keep], stop
