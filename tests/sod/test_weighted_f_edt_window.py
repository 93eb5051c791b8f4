"""The weighted F on the bounded transform with the band-only nearest index equals the full exact transform bit
for bit, and takes tall images (squared distances past 2^31): the saturation bound checked exhaustively around it,
the band argument checked by filling ``Et`` off the band with garbage, both paths against the full exact transform
with every index, and PySODMetrics on masks whose distances straddle 265 and on tie-heavy masks."""

from __future__ import annotations

import math

import numpy as np
import py_sod_metrics as psm
import pytest
import torch

from nobg_metrics import functional as F
from nobg_metrics._seg_batch import prepare_segmentation
from nobg_metrics.functional.sod import weighted_f as module
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import nearest_feature
from nobg_metrics.ops.nearest_band import BandIndex


def _reference(pred: np.ndarray, gt: np.ndarray) -> float:
    metric = psm.WeightedFmeasure()
    metric.step(pred, gt)
    return float(metric.get_results()["wfm"])


def _per_image(pred: np.ndarray, gt: np.ndarray) -> float:
    return F.weighted_f_measure(torch.from_numpy(pred), torch.from_numpy(gt), normalize=True,
                                empty_gt="reference").item()


def _straddling_pairs(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Small objects in a corner or a thin strip: distances from 0 to far past 265 (D = 70 225 .. 70 756)."""
    pairs = []
    for shape, box in [((1, 700), (0, 1, 0, 3)), ((700, 1), (690, 700, 0, 1)), ((300, 420), (0, 5, 0, 7)),
                       ((283, 283), (140, 143, 140, 143)), ((266, 300), (0, 266, 0, 1))]:
        gt = np.zeros(shape, np.uint8)
        gt[box[0]:box[1], box[2]:box[3]] = 255
        pred = np.clip(rng.normal(20, 30, shape) + (gt > 0) * 180, 0, 255).astype(np.uint8)
        pairs.append((pred, gt))
    return pairs


def _tie_heavy_pairs(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grids, checkerboards, diagonals, single pixels, 1 x N and N x 1: many equidistant gt pixels."""
    pairs = []
    for h, w in [(29, 37), (1, 45), (45, 1), (12, 12)]:
        yy, xx = np.mgrid[0:h, 0:w]
        single = np.zeros((h, w), bool)
        single[h // 2, w // 3] = True
        for mask in [(yy % 4 == 0) & (xx % 5 == 0), (yy + xx) % 2 == 0, (yy - xx) % 5 == 0, yy % 3 == 0, single]:
            if mask.any():
                pairs.append((rng.integers(0, 256, (h, w)).astype(np.uint8), (mask * 255).astype(np.uint8)))
    return pairs


def _full_transform_terms(gt: torch.Tensor) -> module._GtTerms:
    """The gt-only terms from the full exact transform: every distance and every nearest index of the crop (what
    the unbounded reference path), in the package's own layout."""
    batch = gt.shape[0]
    full = nearest_feature(gt)
    table = module._background_weight_table(gt.device)
    squared = full.squared.clamp(max=table.numel() - 1).long()  # B(D) = B(min(D, 266²)): the bound below
    weight = table[squared].masked_fill_(gt, 0.0)
    box = host_reads.window(gt, 3)
    crop_height, crop_width = box.rows.stop - box.rows.start, box.cols.stop - box.cols.start
    rows, cols = full.rows - box.rows.start, full.cols - box.cols.start  # the nearest pixel in the crop
    flat = (rows * crop_width + cols) + torch.arange(batch)[:, None, None] * (crop_height * crop_width)
    band = BandIndex(None, flat[:, box.rows, box.cols].reshape(-1))
    return module._GtTerms(weight, band, box, gt.flatten(1).sum(dim=1))


def _both(pairs, monkeypatch) -> tuple[list[float], list[float]]:
    """Per-image values on the bounded path and on the full transform."""
    bounded = [_per_image(pred, gt) for pred, gt in pairs]
    monkeypatch.setattr(module, "_gt_terms", _full_transform_terms)
    full = [_per_image(pred, gt) for pred, gt in pairs]
    monkeypatch.undo()
    return bounded, full


def test_background_weight_is_exactly_two_from_70226_on():
    """``2 - exp(log(0.5) / 5 * sqrt(D))`` (the reference's float64 ops) for every D in 0 .. 2·10^6: below 2.0 up
    to 70 225, exactly 2.0 from 70 226 on; the table the metric reads agrees."""
    squared = np.arange(2_000_001, dtype=np.float64)
    weight = 2 - np.exp(np.log(0.5) / 5 * np.sqrt(squared))
    assert (weight[:70_226] < 2.0).all() and (weight[70_226:] == 2.0).all()
    table = module._background_weight_table(torch.device("cpu")).numpy()
    assert table.size == 266**2 + 1 and (table[:70_226] < 2.0).all() and (table[70_226:] == 2.0).all()
    assert np.abs(table - weight[: table.size]).max() <= 2.3e-16  # torch's vector exp: <= 1 ulp off numpy's
    # beyond the check: exp(log(0.5) / 5 * 265.0019) = 2^-53 (1 - 2.6e-4) < 2^-53 = ulp(2) / 2, and sqrt, * and
    # exp only decrease it further (monotone, < 1e-15 relative error): 2 - y rounds to 2.0
    assert math.exp(math.log(0.5) / 5 * math.sqrt(70_226)) < 2.0**-53 * (1 - 2.5e-4)


def test_et_off_the_band_is_never_read(monkeypatch):
    """The band argument: ``Et`` is read only through ``EA`` on gt pixels, i.e. within Chebyshev distance 3 of the
    gt. Garbage (large finite values) everywhere else in the crop leaves every value bit-identical."""
    rng = np.random.default_rng(5)
    pairs = _tie_heavy_pairs(rng) + _straddling_pairs(rng)[2:4]
    clean = [_per_image(pred, gt) for pred, gt in pairs]
    spread = BandIndex.spread

    def spread_with_garbage(self, values, rows, cols):
        out = spread(self, values, rows, cols)
        gt = garbage_gt[0][:, rows, cols]
        reach = torch.nn.functional.max_pool2d(gt[:, None].double(), 7, 1, 3)[:, 0] > 0  # Chebyshev <= 3
        garbage = torch.rand(out.shape, generator=torch.Generator().manual_seed(0), dtype=out.dtype) * 1e6
        return torch.where(reach, out, garbage)

    garbage_gt: list[torch.Tensor] = []
    monkeypatch.setattr(BandIndex, "spread", spread_with_garbage)
    for (pred, gt), expected in zip(pairs, clean):
        garbage_gt[:] = [torch.from_numpy(gt > 128)[None]]
        assert _per_image(pred, gt) == expected


@pytest.mark.parametrize("kind", ["straddling", "tie-heavy"])
def test_bit_identical_to_the_full_transform_and_equal_to_pysodmetrics(kind, monkeypatch):
    rng = np.random.default_rng(7)
    pairs = _straddling_pairs(rng) if kind == "straddling" else _tie_heavy_pairs(rng)
    bounded, full = _both(pairs, monkeypatch)
    assert bounded == full  # bit for bit
    reference = [_reference(pred, gt) for pred, gt in pairs]
    assert max(abs(a - b) for a, b in zip(bounded, reference)) <= 1e-12


def test_device_path_is_bit_identical_to_the_full_transform(monkeypatch):
    """Off CPU: every column a site, the whole image as the crop, every pixel through the band index."""
    rng = np.random.default_rng(8)
    pairs = _tie_heavy_pairs(rng)[::3] + _straddling_pairs(rng)[2:4]
    cpu = [_per_image(pred, gt) for pred, gt in pairs]
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    device = [_per_image(pred, gt) for pred, gt in pairs]
    monkeypatch.setattr(module, "_gt_terms", _full_transform_terms)
    device_full = [_per_image(pred, gt) for pred, gt in pairs]
    assert device == device_full  # bit for bit
    assert max(abs(a - b) for a, b in zip(device, cpu)) <= 1e-14  # the blur runs on the whole image: other sums


@pytest.mark.parametrize("shape", [(92_681, 1), (100_000, 1), (1, 100_000), (46_345, 2)])
def test_tall_and_wide_images_equal_pysodmetrics(shape):
    """A gt at one end of a tall image puts pixels 46 341+ rows away: their squared distances pass 2^31 and are
    kept in int64 (in int32 they wrapped: an IndexError from H = 92 681 on, wrong weights below)."""
    rng = np.random.default_rng(shape[0])
    gt = np.zeros(shape, np.uint8)
    gt[:3, :1] = 255
    pred = rng.integers(0, 256, shape).astype(np.uint8)
    assert abs(_per_image(pred, gt) - _reference(pred, gt)) <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1_000_000, 1), (1, 1_000_000)])
def test_million_pixel_strips_equal_pysodmetrics(shape):
    rng = np.random.default_rng(9)
    gt = np.zeros(shape, np.uint8)
    gt.reshape(-1)[123_456:123_500] = 255
    gt.reshape(-1)[-10:] = 255
    pred = rng.integers(0, 256, shape).astype(np.uint8)
    assert abs(_per_image(pred, gt) - _reference(pred, gt)) <= 1e-12


def test_batched_gts_share_one_band_index():
    """A batch's band targets and sources index the whole batch (images of one size scored together)."""
    rng = np.random.default_rng(10)
    pairs = _tie_heavy_pairs(rng)[:5]  # all 29 x 37
    preds = torch.from_numpy(np.stack([p for p, _ in pairs]))
    gts = torch.from_numpy(np.stack([g for _, g in pairs]))
    batch = prepare_segmentation(preds, gts, normalize=True)[0]
    together = module._weighted_f_per_image(batch, 1.0, "reference")
    alone = [_per_image(pred, gt) for pred, gt in pairs]
    assert together.tolist() == alone
