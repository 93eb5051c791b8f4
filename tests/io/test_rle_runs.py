"""Compressed RLE strings decoded straight to runs: the runs the counts decoder gives, its errors on malformed
strings, and run-backed bands of every segmentation form that hold the dense masks' pixels."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.io.coco.forms import split_forms
from nobg_metrics.io.coco.masks import segmentation_bands, segmentation_masks
from nobg_metrics.io.coco.rle import check_counts, counts_to_string, decode_strings, encode, rle_intervals
from nobg_metrics.io.coco.rle_runs import string_runs
from nobg_metrics.io.errors import MalformedRle
from nobg_metrics.ops.row_bands import RowBands
from nobg_metrics.ops.run_overlap import run_areas


def _random_masks(generator: torch.Generator, sides_below: int) -> torch.Tensor:
    """1 to 5 random masks of one random size (each side below ``sides_below``), of a random density."""
    height, width = (int(v) for v in torch.randint(1, sides_below, (2,), generator=generator))
    count = int(torch.randint(1, 6, (1,), generator=generator))
    return torch.rand((count, height, width), generator=generator) < torch.rand(1, generator=generator)


def _reference_runs(strings: list[str], height: int, width: int) -> list[list[int]]:
    counts, lengths = decode_strings(strings)
    check_counts(counts, lengths, height, width)
    return [t.tolist() for t in rle_intervals(counts, lengths)]


@pytest.mark.parametrize("seed", range(4))
def test_runs_equal_the_counts_decoders(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(60):
        masks = _random_masks(generator, 9)
        height, width = masks.shape[1:]
        strings = [str(encode(mask)["counts"]) for mask in masks]
        assert [t.tolist() for t in string_runs(strings, height, width)] == _reference_runs(strings, height, width)
        as_bytes = [s.encode() for s in strings]
        assert [t.tolist() for t in string_runs(as_bytes, height, width)] == _reference_runs(strings, height, width)


@pytest.mark.parametrize("value", [31, 32, 33, 1000, 2**20, 2**28, 2**29 - 1])
def test_long_values_and_negative_differences(value: int) -> None:
    counts = [value, 1, 2, max(value - 5, 0), 7, 3]  # the 4th is coded as a negative difference
    strings = [counts_to_string(c) for c in (counts, [*counts[:4], 10], [3, *counts[1:5], value])]
    assert [t.tolist() for t in string_runs(strings, 1, sum(counts))] == _reference_runs(strings, 1, sum(counts))


@pytest.mark.parametrize(("strings", "index", "reason"), [
    (["0o1", "0\x7f"], 1, "outside"),
    (["0o1", "éa"], 1, "outside"),
    (["0o1", "1P"], 1, "ends inside a value"),
    (["0o1", "1P", "0o1"], 1, "ends inside a value"),  # not the last: its value would run into the next string
    (["``````0"], 0, "more than 6"),
    (["0o1", "0o1", "1O"], 2, "negative"),  # the 2nd count of "1O" is -1
    (["0o1", ""], 1, "add up to 0 pixels"),
    (["0o1", "0n1"], 1, "add up to 62 pixels"),
])
def test_malformed_strings_raise_what_the_counts_decoder_raises(strings: list[str], index: int, reason: str) -> None:
    with pytest.raises(MalformedRle) as caught:
        string_runs(strings, 1, 63)
    assert caught.value.index == index and reason in caught.value.reason


def test_bands_of_mixed_forms_hold_sorted_runs_and_the_dense_pixels() -> None:
    rng = np.random.default_rng(3)
    height, width = 17, 23
    segmentations: list = []
    for i in range(24):
        if i % 3 == 0:  # polygons of several (overlapping) parts, after other forms
            segmentations.append([rng.uniform(-2, [width + 2, height + 2], (int(rng.integers(3, 8)), 2)).ravel()
                                  .tolist() for _ in range(int(rng.integers(1, 4)))])
        elif i % 3 == 1:
            mask = torch.from_numpy(rng.random((height, width)) < 0.4)
            segmentations.append(encode(mask))
        else:
            mask = torch.from_numpy(rng.random((height, width)) < 0.2)
            counts = decode_strings([str(encode(mask)["counts"])])[0].tolist()  # an uncompressed RLE
            segmentations.append({"size": [height, width], "counts": counts})
    bands = segmentation_bands(segmentations, height, width)
    assert bands.runs is not None
    owner, start, stop = bands.runs
    key = owner * (height * width + 1) + start
    assert bool((key[1:] > key[:-1]).all()) and bool((stop > start).all())
    assert bool((start[1:] >= stop[:-1])[owner[1:] == owner[:-1]].all())  # no overlap within a mask
    assert torch.equal(bands.dense(), segmentation_masks(segmentations, height, width, transposed=True))


@pytest.mark.parametrize("seed", range(3))
def test_the_extents_of_decoded_strings_are_the_bands_and_areas_of_their_runs(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(40):
        masks = _random_masks(generator, 12)
        count, height, width = masks.shape
        masks[torch.rand(count, generator=generator) < 0.3] = False  # some empty
        forms = split_forms([{"size": [height, width], "counts": encode(m)["counts"]} for m in masks], height, width)
        assert forms.extents is not None and forms.string_runs is not None
        runs = tuple(torch.from_numpy(a) for a in forms.string_runs)
        bands = RowBands.from_runs(*runs, count, width, height)
        tops, bottoms, areas = forms.extents
        assert tops.tolist() == bands.tops and bottoms.tolist() == bands.bottoms
        assert areas.tolist() == run_areas(*runs, count).tolist() == masks.sum((1, 2)).tolist()
    mixed = split_forms([{"size": [2, 2], "counts": "13"}, {"size": [2, 2], "counts": [4]}], 2, 2)
    assert mixed.extents is None  # not every mask a decoded string: the bands are found from all runs later
