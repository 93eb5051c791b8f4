"""DAVIS J and F per frame and per sequence equal the port of davis2017-evaluation (tests/reference/davis_port.py,
itself checked against the real code by tools/validate_davis_port.py): boundary maps bit for bit, the ceil width
rule, void handling, the empty-contour cases, db_statistics with both decay indices, and the semi-supervised
protocol on generated DAVIS folders (odd sizes, 854x480, multi-object, empty frames, void bands)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.functional.video.davis import davis_bound_pix, seg2bmap_packed
from nobg_metrics.ops.morphology import pack_bits, unpack_bits
from tests.helpers.davis_data import write_davis
from tests.reference import davis_port as port


def _frames(seed: int, shapes) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(pred, gt, void) bool triples: shifted noisy blobs, empty and full masks, void specks on every other one."""
    rng = np.random.default_rng(seed)
    out = []
    for index, (h, w) in enumerate(shapes):
        yy, xx = np.mgrid[0:h, 0:w]
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        gt = (((yy - cy) / (rng.uniform(0.1, 0.6) * h + 0.5)) ** 2
              + ((xx - cx) / (rng.uniform(0.1, 0.6) * w + 0.5)) ** 2 <= 1)
        pred = (np.roll(gt, (int(rng.integers(-3, 4)), int(rng.integers(-5, 6))), axis=(0, 1))
                ^ (rng.random((h, w)) < 0.01))
        kind = index % 6
        if kind == 1:
            pred = np.zeros_like(gt)
        elif kind == 2:
            gt = np.zeros_like(gt)
        elif kind == 3:
            pred = np.ones_like(gt)
        elif kind == 4:
            gt, pred = np.zeros_like(gt), np.zeros_like(gt)
        void = rng.random((h, w)) < 0.05 if index % 2 else np.zeros_like(gt)
        out.append((pred, gt, void))
    return out


SHAPES = [(1, 17), (17, 1), (2, 3), (5, 5), (37, 53), (64, 48), (33, 70), (9, 129), (130, 67), (3, 300)] * 2


def test_boundary_map_equals_seg2bmap():
    rng = np.random.default_rng(0)
    for h, w in [(1, 1), (1, 17), (17, 1), (2, 3), (7, 63), (5, 64), (6, 65), (4, 128), (9, 200)]:
        masks = rng.random((4, h, w)) < np.array([0.0, 0.1, 0.5, 1.0])[:, None, None]
        ours = unpack_bits(seg2bmap_packed(pack_bits([torch.from_numpy(masks)]), w), w).numpy()
        for mask, result in zip(masks, ours):
            assert (result == port.boundary_map(mask)).all(), (h, w)


def test_width_rule_is_ceil_of_the_diagonal():
    for h, w in [(480, 854), (1080, 1920), (5, 5), (1, 1), (125, 125), (2160, 3840), (37, 53)]:
        assert davis_bound_pix(h, w) == port.bound_pixels((h, w))
    assert davis_bound_pix(480, 854) == 8  # 0.008 * 979.65 = 7.84: ceil, where round would give 8 too
    assert davis_bound_pix(100, 100) == 2  # 0.008 * 141.4 = 1.13: ceil 2, round 1
    assert davis_bound_pix(480, 854, 3) == 3  # bound_th >= 1: pixels


@pytest.mark.parametrize("seed", [0, 1])
def test_per_frame_values_equal_the_port(seed):
    frames = _frames(seed, SHAPES)
    preds, gts, voids = ([torch.from_numpy(t[i]) for t in frames] for i in range(3))
    j = F.davis_region_similarity(preds, gts, voids).numpy()
    f = F.davis_contour_accuracy(preds, gts, voids).numpy()
    expected_j = [port.region_similarity(g, p, v) for p, g, v in frames]
    expected_f = [port.contour_accuracy(p, g, v) for p, g, v in frames]
    assert np.abs(j - expected_j).max() <= 1e-12
    assert np.abs(f - expected_f).max() <= 1e-12
    # without void, and with float / uint8 predictions and uint8 gts read by the input contract
    j = F.davis_region_similarity([p.double() * 0.9 for p in preds], [g.to(torch.uint8) * 255 for g in gts]).numpy()
    f = F.davis_contour_accuracy([p.to(torch.uint8) * 200 for p in preds], gts, bound_th=2).numpy()
    assert np.abs(j - [port.region_similarity(g, p) for p, g, _ in frames]).max() <= 1e-12
    assert np.abs(f - [port.contour_accuracy(p, g, bound_th=2) for p, g, _ in frames]).max() <= 1e-12


def test_empty_contour_and_union_cases():
    empty, some = torch.zeros(1, 9, 9, dtype=torch.bool), torch.zeros(1, 9, 9, dtype=torch.bool)
    some[0, 2:5, 3:7] = True
    full = torch.ones(1, 9, 9, dtype=torch.bool)
    assert F.davis_region_similarity(empty, empty).item() == 1.0  # union 0: 1
    assert F.davis_region_similarity(some, empty).item() == 0.0
    assert F.davis_region_similarity(some, empty, some).item() == 1.0  # the void covers the union
    assert F.davis_contour_accuracy(empty, empty).item() == 1.0  # (p, r) = (1, 1)
    assert F.davis_contour_accuracy(empty, some).item() == 0.0  # no predicted contour: (1, 0)
    assert F.davis_contour_accuracy(some, empty).item() == 0.0  # no gt contour: (0, 1)
    assert F.davis_contour_accuracy(full, full).item() == 1.0  # the image border is never contour: no contours
    assert F.davis_contour_accuracy(full, some).item() == 0.0
    assert F.davis_contour_accuracy(some, some, some).item() == 1.0  # void zeroed first: nothing left on either side


def test_statistics_equal_db_statistics():
    rng = np.random.default_rng(2)
    for length in [*range(1, 40), 100, 255, 256, 257, 258, 262, 300, 511, 513]:
        values = rng.random(length)
        expected = np.array(port.sequence_statistics(values))
        reference = np.array([t.item() for t in F.davis_statistics(torch.from_numpy(values), "reference")])
        assert (np.isnan(reference) == np.isnan(expected)).all(), length
        finite = ~np.isnan(expected)
        assert np.abs(reference - expected)[finite].max() <= 1e-12, length
        exact = np.array([t.item() for t in F.davis_statistics(torch.from_numpy(values))])
        if length <= 255:  # the two decay indices agree until the reference's uint8 edges wrap (ids[4] + 1 at 256)
            assert np.abs(exact - expected).max() <= 1e-12, length
        quarter = [(i * (length - 1) + 2) // 4 for i in range(5)]
        decay = values[quarter[0]:quarter[1] + 1].mean() - values[quarter[3]:quarter[4] + 1].mean()
        assert abs(exact[2] - decay) <= 1e-12 and not np.isnan(exact).any()
    assert np.isnan(F.davis_statistics(torch.rand(256), "reference")[2].item())  # ids[4] + 1 = 256 wraps to 0


def test_sequences_are_grouped_by_key_and_ordered_by_frame():
    frames = _frames(3, [(21, 34)] * 8)
    preds, gts = [torch.from_numpy(t[0]) for t in frames], [torch.from_numpy(t[1]) for t in frames]
    keys = ["a", "b", "a", "b", "a", "b", "a", "b"]
    order = [3, 0, 2, 1, 7, 5, 6, 4]  # arrival order differs from frame order
    shuffled = [preds[i] for i in order], [gts[i] for i in order]
    j = [port.region_similarity(g, p) for p, g, _ in frames]
    expected = np.mean([port.sequence_statistics(np.array([j[i] for i in range(8) if keys[i] == name]))[2]
                        for name in ("a", "b")])
    assert abs(F.davis_j(*shuffled, sequence=[keys[i] for i in order], frame=order, statistic="decay").item()
               - expected) <= 1e-12
    as_tensors = F.davis_j(*shuffled, sequence=torch.tensor([ord(keys[i]) for i in order]),
                           frame=torch.tensor(order), statistic="decay")
    assert abs(as_tensors.item() - expected) <= 1e-12


def _protocol_values(folders, method, decay_index):
    """Our per-object rows and J&F-Mean, fed object by object from the folders (the command does the same)."""
    davis = folders["davis"] / "Annotations" / "480p"
    metric = nm.DavisJAndF(decay_index=decay_index)
    for seq in (folders["davis"] / "ImageSets" / "2017" / "val.txt").read_text().split():
        names = sorted(os.listdir(davis / seq))
        first = port.read_labels(str(davis / seq / names[0]))
        count = int(np.where(first == 255, 0, first).max())
        for obj in range(1, count + 1):
            gts = [torch.from_numpy(port.read_labels(str(davis / seq / n)) == obj) for n in names[1:-1]]
            preds = [torch.from_numpy(port.read_labels(str(folders[method] / seq / n)) == obj) for n in names[1:-1]]
            metric.update(preds, gts, sequence=f"{seq}_{obj}")
    return metric


@pytest.mark.parametrize("method", ["shifted", "missing"])
def test_semisupervised_protocol_equals_the_port(tmp_path, method):
    sequences = {"blackswan": (5, 37, 53, 1), "dogs-jump": (7, 24, 19, 3), "tiny": (3, 5, 7, 1)}
    folders = write_davis(tmp_path, sequences, seed=4, methods=(method,))
    expected = port.evaluate_semisupervised(str(folders["davis"] / "Annotations" / "480p"), str(folders[method]),
                                            list(sequences))
    metric = _protocol_values(folders, method, "exact")
    table = metric.per_sequence()
    assert sorted(table["sequence"]) == sorted(expected["per_object"])
    for row, name in enumerate(table["sequence"]):
        ours = [table[key][row].item() for key in ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay")]
        assert np.abs(np.array(ours) - expected["per_object"][name]).max() <= 1e-12, name
    summary = metric.summary()
    for key, value in expected["global"].items():
        assert abs(summary[key].item() - value) <= 1e-12, key


@pytest.mark.slow
def test_semisupervised_protocol_on_davis_sizes_and_a_long_sequence(tmp_path):
    folders = write_davis(tmp_path, seed=5, methods=("shifted",))
    sequences = (folders["davis"] / "ImageSets" / "2017" / "val.txt").read_text().split()
    expected = port.evaluate_semisupervised(str(folders["davis"] / "Annotations" / "480p"), str(folders["shifted"]),
                                            sequences)
    table = _protocol_values(folders, "shifted", "reference").per_sequence()
    for row, name in enumerate(table["sequence"]):
        ours = np.array([table[k][row].item() for k in ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall",
                                                          "F-Decay")])
        reference = np.array(expected["per_object"][name])
        assert (np.isnan(ours) == np.isnan(reference)).all(), name  # long-walk's wrapped decay bins
        assert np.abs(ours - reference)[~np.isnan(reference)].max() <= 1e-12, name


def test_bad_arguments():
    x = torch.zeros(2, 4, 4)
    with pytest.raises(ValueError, match="bound_th"):
        F.davis_contour_accuracy(x, x, bound_th=1.5)
    with pytest.raises(ValueError, match="bound_th"):
        nm.DavisF(bound_th=0)
    with pytest.raises(ValueError, match="statistic"):
        nm.DavisJ(statistic="median")
    with pytest.raises(ValueError, match="decay_index"):
        nm.DavisJAndF(decay_index="uint8")
    with pytest.raises(ValueError, match="one key per image"):
        F.davis_j(x, x, sequence=["a"])
    with pytest.raises(TypeError, match="sequence"):
        F.davis_j(x, x, sequence=2.5)
    with pytest.raises(ValueError, match="int64 of shape"):
        F.davis_j(x, x, frame=torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="void"):
        F.davis_j(x, x, torch.zeros(2, 4, 5))
    with pytest.raises(ValueError, match="non-empty 1-D"):
        F.davis_statistics(torch.zeros(0))


@pytest.mark.cuda
def test_cuda_equals_cpu():
    frames = _frames(6, SHAPES)
    preds, gts, voids = ([torch.from_numpy(t[i]) for t in frames] for i in range(3))
    for function in (F.davis_region_similarity, F.davis_contour_accuracy):
        cuda = function([p.cuda() for p in preds], [g.cuda() for g in gts], [v.cuda() for v in voids])
        assert torch.equal(cuda.cpu(), function(preds, gts, voids))
