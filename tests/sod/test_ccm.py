"""The camouflage context measure CCm equals PySODMetrics 1.6.2 ``CamouflageContextMeasure`` (β² = 1.2, γ = 8,
λ = 20): its camouflage degree map to 1e-12 and the measure to 1e-6 (the Cm part's float32 forward filter), on
generated scenes — smooth colour fields with objects of a similar colour, non-square, tiny and thin objects without
full patches, objects filling the frame, images under 7 px; the exact 1-NN rule against sklearn; inputs and class."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from py_sod_metrics import CamouflageContextMeasure as ReferenceCcm

from nobg_metrics.functional.sod.camouflage_degree import (
    camouflage_degree,
    surrounding_background,
)
from nobg_metrics.functional.sod.context_measure import camouflage_context_measure
from nobg_metrics.metrics.sod.context_measure import CamouflageContextMeasure

TOLERANCE = 1e-6
"""The Cm part: the reference's forward filter runs in float32 (measured worst 6e-9 here)."""

KINDS = ("blobs", "ellipse", "border", "thin", "tiny", "full", "empty")
"""Objects: two blobs, one ellipse, one cut by the frame, a 4-px line and a 5 x 5 square (no full 7 x 7 patch),
the whole frame (no surrounding background), none."""


def scene(height: int, width: int, kind: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred_u8, gt_u8, image_u8 (H, W, 3))``: a smooth colour field, the object a few levels off it."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:height, 0:width]
    y, x = rows / max(height, 1), cols / max(width, 1)
    gt = np.zeros((height, width), bool)
    if kind in ("blobs", "ellipse", "border"):
        for _ in range(2 if kind == "blobs" else 1):
            cy, cx = (rng.uniform(-0.1, 0.3), rng.uniform(0.2, 0.8)) if kind == "border" else rng.uniform(0.3, 0.7, 2)
            ry, rx = rng.uniform(0.15, 0.3, 2)
            gt |= ((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2 <= 1
    elif kind == "thin":
        gt[height // 3 : height // 3 + 4, width // 5 : width - width // 5] = True
    elif kind == "tiny":
        gt[height // 2 : height // 2 + 5, width // 2 : width // 2 + 5] = True
    elif kind == "full":
        gt[:] = True
    phases = rng.uniform(0, 6, 3)
    field = np.stack([125 + 70 * np.sin(5 * x + p) * np.cos(4 * y - p) for p in phases], -1)
    field += rng.normal(0, 5, field.shape)
    image = np.where(gt[..., None], field + rng.normal(rng.uniform(5, 25), 4, 3), field)
    soft = np.clip(gt * 0.85 + rng.normal(0.1, 0.15, gt.shape), 0, 1)
    return (np.rint(soft * 255).astype(np.uint8), gt.astype(np.uint8) * 255,
            np.clip(np.rint(image), 0, 255).astype(np.uint8))


SHAPES = [(60, 80), (47, 63), (90, 41), (33, 33)]


@functools.cache
def scenes() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return [scene(h, w, kind, seed) for seed, (h, w) in enumerate(SHAPES) for kind in KINDS]


@functools.cache
def reference_values() -> tuple[float, ...]:
    return tuple(_reference(*s) for s in scenes())


def _reference(pred, gt, image) -> float:
    metric = ReferenceCcm()
    metric.step(pred, gt, img=image)
    return float(metric.scores[0])


def _tensors(pred, gt, image):
    return torch.from_numpy(pred), torch.from_numpy(gt), torch.from_numpy(image).permute(2, 0, 1).contiguous()


def _ours(pred, gt, image, **options) -> float:
    options = {"normalize": True, "empty_gt": "reference", **options}
    return camouflage_context_measure(*_tensors(pred, gt, image), **options).item()


def test_camouflage_degree_equals_the_reference():
    reference = ReferenceCcm()
    worst = 0.0
    for pred, gt, image in scenes():
        mask = (gt > 128).astype(np.float64)
        _, expected = reference._calculate_camouflage_degree(image, mask)
        ours = camouflage_degree(_tensors(pred, gt, image)[2][None], torch.from_numpy(gt > 128)[None])[0].numpy()
        worst = max(worst, float(np.abs(ours - expected).max()))
    assert worst <= 1e-12


def test_per_image_values_equal_the_reference():
    values = [(_ours(*s), expected) for s, expected in zip(scenes(), reference_values())]
    assert max(abs(a - b) for a, b in values) <= TOLERANCE
    assert any(a != b for a, b in values)  # never bit for bit: the reference's float32 filter


def test_batches_lists_and_the_class_agree():
    group = [s for s in scenes() if s[0].shape == SHAPES[0]]
    preds, gts, images = (torch.stack([_tensors(*s)[k] for s in group]) for k in range(3))
    expected = np.mean(reference_values()[: len(group)])
    batched = camouflage_context_measure(preds, gts, images, normalize=True, empty_gt="reference").item()
    assert abs(batched - expected) <= TOLERANCE
    mixed = scenes()[:3] + scenes()[-3:]
    listed = [list(t) for t in zip(*(_tensors(*s) for s in mixed))]
    metric = CamouflageContextMeasure(normalize=True, empty_gt="reference")
    metric.update(*listed)
    expected = np.mean(reference_values()[:3] + reference_values()[-3:])
    assert abs(metric.compute().item() - expected) <= TOLERANCE


def test_without_patches_the_degree_is_zero_and_small_images():
    """No full 7 x 7 patch in the object (thin, tiny) or no surrounding background (full frame): cd = 0, as the
    reference. Images under 7 px have no patches at all; the reference raises for some such sizes (its padded
    sliding window is smaller than 7) and scores the others with cd = 0: ours are cd = 0 for all."""
    for pred, gt, image in scenes():
        if pred.shape != SHAPES[1]:
            continue
        kind_has_patches = bool(camouflage_degree(_tensors(pred, gt, image)[2][None],
                                                  torch.from_numpy(gt > 128)[None]).any())
        full_ring = surrounding_background(torch.from_numpy(gt > 128)[None]).any().item()
        assert kind_has_patches or not full_ring or (gt > 128).sum() < 400
    for height, width in [(5, 30), (6, 6), (3, 30), (1, 1)]:
        pred, gt, image = scene(height, width, "tiny", 9)
        cd = camouflage_degree(_tensors(pred, gt, image)[2][None], torch.from_numpy(gt > 128)[None])
        assert not cd.any()
        if height >= 5:  # the reference accepts these sizes
            assert abs(_ours(pred, gt, image) - _reference(pred, gt, image)) <= TOLERANCE
    pred, gt, image = scene(40, 40, "empty", 10)
    assert _ours(pred, gt, image) == 0.0  # the reference: 0 whatever the prediction
    agreement = _ours(pred, gt, image, normalize=False, empty_gt="agreement")
    assert agreement == pytest.approx(1 - pred.mean() / 255, abs=1e-12)


def test_bad_inputs_name_the_argument():
    pred, gt, image = (t for t in _tensors(*scenes()[0]))
    with pytest.raises(TypeError, match="image"):
        camouflage_context_measure(pred, gt, image.float())
    with pytest.raises(ValueError, match="image"):
        camouflage_context_measure(pred, gt, image[:2])
    with pytest.raises(ValueError, match=r"image\[1\]"):
        camouflage_context_measure([pred, pred], [gt, gt], [image, image[:, :10]])
    with pytest.raises(TypeError, match="pred"):
        camouflage_context_measure([pred], [gt], image)
    with pytest.raises(ValueError, match="gamma"):
        CamouflageContextMeasure(gamma=0.0)
    with pytest.raises(ValueError, match="lambda_spatial"):
        camouflage_context_measure(pred, gt, image, lambda_spatial=-1.0)


def test_a_collection_passes_the_image_to_ccm_only_and_rejects_a_batch_without_it():
    """``make_collection(metrics=[..., "camouflage_context_measure"])``: ``update(pred, gt, image=...)`` reaches CCm
    alone (the others never see it); no image or a bad one is a ValueError / TypeError naming ``image``, and the
    rejected batch changes no member."""
    from nobg_metrics.collection import (
        IMAGE_NAMES,
        METRIC_NAMES,
        TIERS,
        make_collection,
    )

    assert "camouflage_context_measure" in METRIC_NAMES and IMAGE_NAMES == ("camouflage_context_measure",)
    assert not any(name in tier for tier in TIERS.values() for name in IMAGE_NAMES)
    group = [s for s in scenes() if s[0].shape == SHAPES[0]][:3]
    pred, gt, image = (torch.stack([_tensors(*s)[k] for s in group]) for k in range(3))
    collection = make_collection(metrics=["mae", "context_measure", "camouflage_context_measure"],
                                 normalize=True, empty_gt="reference")
    collection.update(pred, gt, image=image)
    before = {name: dict(member.metric_state) for name, member in collection.items(keep_base=True)}
    for bad, error in ((None, ValueError), (image[:, :2], ValueError), (image.float(), TypeError),
                       (image[:2], ValueError)):
        with pytest.raises(error, match="image"):
            collection.update(pred, gt, image=bad)
    for name, member in collection.items(keep_base=True):
        assert all(torch.equal(before[name][key], value) for key, value in member.metric_state.items()), name
        assert member.update_count == 1, name
    values = collection.compute()
    assert abs(values["camouflage_context_measure"].item() - np.mean(reference_values()[:3])) <= TOLERANCE
    alone = make_collection(metrics=["mae", "context_measure"], normalize=True, empty_gt="reference")
    alone.update(pred, gt, image=image)  # no member takes it: ignored
    assert torch.equal(alone.compute()["context_measure"], values["context_measure"])
