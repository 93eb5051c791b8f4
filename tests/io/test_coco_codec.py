"""The COCO mask codec of ``nobg-metrics instances`` (io/coco/rle.py, coco_intervals.py, coco_polygons.py,
coco_masks.py) against the installed pycocotools: every mask bit, every count, every box equal on generated cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.io.coco.masks import segmentation_masks
from nobg_metrics.io.coco.polygons import polygon_masks
from nobg_metrics.io.coco.rle import counts_to_masks, counts_to_string, decode_strings, encode, rle_area, rle_bbox
from nobg_metrics.io.errors import MalformedRle, SegmentationError

mask_utils = pytest.importorskip("pycocotools.mask")
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # pycocotools on numpy 2


def _sizes(rng: np.random.Generator, count: int, top: int = 30) -> list[tuple[int, int]]:
    sizes = [(1, 1), (1, 17), (13, 1), (2, 2)]
    return sizes + [(int(h), int(w)) for h, w in rng.integers(1, top, (count - len(sizes), 2))]


def _random_mask(rng: np.random.Generator, h: int, w: int, kind: int) -> np.ndarray:
    if kind == 0:
        return rng.random((h, w)) < rng.random()
    if kind == 1:
        return np.zeros((h, w), bool)
    if kind == 2:
        return np.ones((h, w), bool)
    mask = np.zeros((h, w), bool)
    mask[rng.integers(0, h):rng.integers(0, h + 1), rng.integers(0, w):rng.integers(0, w + 1)] = True
    return mask


def _reference_rle(mask: np.ndarray) -> dict:
    return mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))


@pytest.mark.parametrize("seed", [0, 1])
def test_encode_and_decode_match_pycocotools(seed):
    rng = np.random.default_rng(seed)
    for i, (h, w) in enumerate(_sizes(rng, 60)):
        mask = _random_mask(rng, h, w, i % 4)
        reference = _reference_rle(mask)
        ours = encode(torch.from_numpy(mask))
        assert ours == {"size": [h, w], "counts": reference["counts"].decode()}
        counts, lengths = decode_strings([reference["counts"]])
        assert torch.equal(counts_to_masks(counts, lengths, h, w)[0], torch.from_numpy(mask))
        assert int(rle_area(counts, lengths)[0]) == int(mask_utils.area(reference))
        assert rle_bbox(counts, lengths, h, w)[0].tolist() == mask_utils.toBbox(reference).tolist()


def _random_counts(rng: np.random.Generator, h: int, w: int) -> list[int]:
    """Counts adding up to h*w, zero-length runs included (non-canonical RLEs as files may hold them)."""
    cuts = np.sort(rng.integers(0, h * w + 1, int(rng.integers(0, 9))))
    return np.diff(np.concatenate([[0], cuts, [h * w]])).tolist()


def test_uncompressed_counts_string_box_and_area_match_pycocotools():
    rng = np.random.default_rng(3)
    sizes = _sizes(rng, 120, top=12)
    all_counts = [_random_counts(rng, h, w) for h, w in sizes]
    references = [mask_utils.frPyObjects({"size": [h, w], "counts": c}, h, w) for (h, w), c in zip(sizes, all_counts)]
    counts, lengths = decode_strings([r["counts"] for r in references])  # all strings decoded in one call
    assert counts.tolist() == [v for c in all_counts for v in c]
    assert lengths.tolist() == [len(c) for c in all_counts]
    areas = rle_area(counts, lengths).tolist()
    offset = 0
    for (h, w), count_list, reference, area in zip(sizes, all_counts, references, areas):
        assert counts_to_string(count_list) == reference["counts"].decode()
        one = torch.tensor(count_list), torch.tensor([len(count_list)])
        # the box as pycocotools 2.0.8+ computes it, wrap-around of mask-less RLEs included
        assert rle_bbox(*one, h, w)[0].tolist() == mask_utils.toBbox(reference).tolist(), count_list
        assert area == int(mask_utils.area(reference))
        assert torch.equal(counts_to_masks(*one, h, w)[0], torch.from_numpy(mask_utils.decode(reference).astype(bool)))
        offset += len(count_list)


def test_an_rle_without_foreground_runs_has_pycocotools_wrapped_box():
    h, w = 7, 9
    for count_list in ([63], [10, 0, 53], [5, 0, 3, 0, 55]):
        reference = mask_utils.frPyObjects({"size": [h, w], "counts": count_list}, h, w)
        box = rle_bbox(torch.tensor(count_list), torch.tensor([len(count_list)]), h, w)[0].tolist()
        assert box == mask_utils.toBbox(reference).tolist()


@pytest.mark.parametrize("value", [31, 32, 33, 1000, 2**20, 2**28, 2**29 - 1])
def test_large_counts_and_negative_differences_round_trip(value):
    count_list = [value, 1, 2, max(value - 5, 0), 7, 3]  # the 4th is coded as a negative difference
    n = sum(count_list)
    reference = mask_utils.frPyObjects({"size": [1, n], "counts": count_list}, 1, n)
    assert counts_to_string(count_list) == reference["counts"].decode()
    assert decode_strings([reference["counts"].decode()])[0].tolist() == count_list


@pytest.mark.parametrize(("strings", "index", "reason"), [
    (["0o1", "0\x7f"], 1, "outside"),
    (["0o1", "éa"], 1, "outside"),
    (["0o1", "1P"], 1, "ends inside a value"),
    (["``````0"], 0, "more than 6"),
    (["0o1", "0o1", "1O"], 2, "negative"),  # the 2nd count of "1O" is -1
])
def test_malformed_strings_are_refused_with_their_position(strings, index, reason):
    with pytest.raises(MalformedRle) as caught:
        decode_strings(strings)
    assert caught.value.index == index and reason in caught.value.reason


def test_counts_that_do_not_cover_the_image_are_refused():
    with pytest.raises(MalformedRle, match="add up to 5 pixels, not 2x3 = 6"):
        counts_to_masks(torch.tensor([6, 2, 3]), torch.tensor([1, 2]), 2, 3)


def _polygon_cases(rng: np.random.Generator, h: int, w: int, count: int) -> list[list[float]]:
    polygons = []
    for i in range(count):
        k = int(rng.integers(3, 10))
        mode = i % 7
        if mode == 0:
            points = rng.uniform(-3, [w + 3, h + 3], (k, 2))
        elif mode == 1:
            points = rng.integers(-2, [w + 3, h + 3], (k, 2)).astype(float)
        elif mode == 2:  # tenths: the x5 upsampling's .5 ties
            points = np.round(rng.uniform(-1, [w + 1, h + 1], (k, 2)) * 10) / 10
        elif mode == 3:
            points = np.round(rng.uniform(-1, [w + 1, h + 1], (k, 2)) * 5) / 5 - 0.1
        elif mode == 4:  # repeated points (zero-length edges)
            points = rng.uniform(0, [w, h], (k, 2))
            points[1], points[-1] = points[0], points[-2]
        elif mode == 5:  # far outside the image
            points = rng.uniform(-60, 70, (k, 2))
        else:  # collinear
            points = np.linspace(rng.uniform(0, [w, h]), rng.uniform(0, [w, h]), k)
        polygon = points.ravel().tolist()
        polygons.append([*polygon, 1.25] if i % 5 == 0 else polygon)  # an odd coordinate is ignored
    return polygons


@pytest.mark.parametrize("size", [(1, 1), (1, 23), (19, 1), (7, 9), (24, 17), (30, 31)])
def test_polygons_match_pycocotools_bit_for_bit(size):
    h, w = size
    rng = np.random.default_rng(h * 100 + w)
    polygons = _polygon_cases(rng, h, w, 70)
    ours = polygon_masks(polygons, h, w)  # one batched call
    reference = mask_utils.decode(mask_utils.frPyObjects(polygons, h, w)).astype(bool)
    assert torch.equal(ours, torch.from_numpy(reference).permute(2, 0, 1))


def test_polygons_drawn_in_chunks_equal_one_call(monkeypatch):
    from nobg_metrics.io.coco import polygons as coco_polygons

    rng = np.random.default_rng(5)
    polygons = _polygon_cases(rng, 11, 13, 20)
    whole = polygon_masks(polygons, 11, 13)
    monkeypatch.setattr(coco_polygons, "CHUNK_POINTS", 200)
    assert torch.equal(polygon_masks(polygons, 11, 13), whole)


def test_polygons_of_fewer_than_three_points_draw_nothing():
    masks = polygon_masks([[], [2.0], [3.0, 3.0], [1.0, 1.0, 5.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0]], 9, 11)
    assert not masks.any()


def test_segmentations_of_every_form_match_ann_to_mask():
    from pycocotools.coco import COCO

    rng = np.random.default_rng(7)
    h, w = 23, 31
    coco = COCO()
    coco.imgs = {1: {"height": h, "width": w}}
    segmentations: list = []
    for i in range(40):
        if i % 4 == 0:  # several parts, merged
            segmentations.append([rng.uniform(-2, [w + 2, h + 2], (int(rng.integers(3, 9)), 2)).ravel().tolist()
                                  for _ in range(int(rng.integers(1, 5)))])
        elif i % 4 == 1:
            rle = _reference_rle(rng.random((h, w)) < 0.3)
            segmentations.append({"size": rle["size"], "counts": rle["counts"].decode()})
        elif i % 4 == 2:
            segmentations.append({"size": [h, w], "counts": _random_counts(rng, h, w)})
        else:  # later parts of 0-4 numbers draw nothing
            segmentations.append([rng.uniform(0, [w, h], (5, 2)).ravel().tolist(), [1, 2, 3, 4], [],
                                  rng.uniform(0, [w, h], (3, 2)).ravel().tolist()])
    ours = segmentation_masks(segmentations, h, w)
    assert torch.equal(segmentation_masks(segmentations, h, w, transposed=True), ours.transpose(1, 2))
    assert torch.equal(segmentation_masks(segmentations[1:3], h, w, transposed=True), ours[1:3].transpose(1, 2))
    for i, segmentation in enumerate(segmentations):
        reference = coco.annToMask({"image_id": 1, "segmentation": segmentation}).astype(bool)
        assert torch.equal(ours[i], torch.from_numpy(reference)), i


@pytest.mark.parametrize(("bad", "reason"), [
    ([], "empty list"),
    ([[1, 2, 3, 4]], "4 numbers"),
    ([[1, 2]], "2 numbers"),
    ([[1, 2, "x", 4, 5, 6]], "numbers"),
    ([[1, 2, float("nan"), 4, 5, 6]], "not finite"),
    ({"size": [3, 4], "counts": "0"}, "add up to 0 pixels"),
    ({"size": [3, 5], "counts": [15]}, "size [3, 5] is not its image's"),
    ({"size": [3, 4], "counts": [11]}, "add up to 11"),
    ({"size": [3, 4], "counts": [-1, 13]}, "integers in [0, 2^32)"),
    ({"size": [3, 4], "counts": [10**30]}, "integers in [0, 2^32)"),
    ({"size": [3, 4], "counts": 7}, "string or a list"),
    ({"counts": "0"}, "needs 'size'"),
    ({"size": [3, 4]}, "without counts"),
    (5, "got int"),
])
def test_unreadable_segmentations_name_their_position_and_problem(bad, reason):
    with pytest.raises(SegmentationError) as caught:
        segmentation_masks([[[0, 0, 1, 0, 1, 1]], bad], 3, 4)
    assert caught.value.index == 1 and reason in caught.value.reason


@pytest.mark.cuda
def test_masks_built_on_the_gpu_equal_the_cpu_ones():
    rng = np.random.default_rng(9)
    h, w = 37, 53
    segmentations = [_polygon_cases(rng, h, w, 3), {"size": [h, w], "counts": _random_counts(rng, h, w)}]
    rle = _reference_rle(rng.random((h, w)) < 0.4)
    segmentations.append({"size": rle["size"], "counts": rle["counts"].decode()})
    for transposed in (False, True):
        cpu = segmentation_masks(segmentations, h, w, transposed=transposed)
        gpu = segmentation_masks(segmentations, h, w, transposed=transposed, device="cuda")
        assert gpu.device.type == "cuda" and torch.equal(gpu.cpu(), cpu)
