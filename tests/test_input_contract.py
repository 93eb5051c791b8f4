"""The input contract: accepted layouts, reading rules, and a clear error for every bad input."""

from __future__ import annotations

import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics._matting_inputs import prepare_matting
from nobg_metrics._seg_batch import prepare_segmentation


def test_layouts_give_the_same_value():
    pred, gt = torch.rand(3, 9, 14), torch.rand(3, 9, 14) > 0.5
    expected = F.mae(pred, gt)
    assert torch.equal(F.mae(pred[:, None], gt[:, None]), expected)
    assert torch.equal(F.mae(list(pred), list(gt)), expected)
    assert torch.equal(F.mae(tuple(pred[:, None]), tuple(gt[:, None])), expected)
    assert torch.equal(F.mae(pred[0], gt[0]), F.mae(pred[:1], gt[:1]))


def test_mixed_sizes_in_a_list():
    preds = [torch.rand(5, 7), torch.rand(8, 3), torch.rand(5, 7)]
    gts = [torch.rand(5, 7) > 0.5, torch.rand(8, 3) > 0.5, torch.rand(5, 7) > 0.5]
    per_image = torch.stack([F.mae(p, g) for p, g in zip(preds, gts)])
    assert torch.allclose(F.mae(preds, gts), per_image.mean(), atol=1e-12)
    assert len(prepare_segmentation(preds, gts)) == 2


def test_reading_rules():
    gt = prepare_segmentation(torch.zeros(1, 4), torch.tensor([[127, 128, 129, 255]], dtype=torch.uint8))[0].gt
    assert gt.tolist() == [[[False, False, True, True]]]
    gt = prepare_segmentation(torch.zeros(1, 3), torch.tensor([[0.4, 0.5, 0.6]]))[0].gt
    assert gt.tolist() == [[[False, False, True]]]
    batch = prepare_segmentation(torch.tensor([[51, 102]], dtype=torch.uint8), torch.zeros(1, 2, dtype=torch.bool))[0]
    assert batch.pred.dtype == torch.float64 and batch.pred.tolist() == [[[51 / 255, 102 / 255]]]
    stretched = prepare_segmentation(torch.tensor([[51, 102, 153]], dtype=torch.uint8), torch.zeros(1, 3),
                                     normalize=True)[0].pred
    low, high = 51 / 255, 153 / 255  # the reference's float64 arithmetic, operation for operation
    assert stretched.tolist() == [[[(v / 255 - low) / (high - low) for v in (51, 102, 153)]]]
    constant = prepare_segmentation(torch.full((1, 3), 0.3), torch.zeros(1, 3), normalize=True)[0].pred
    assert torch.allclose(constant, torch.full((1, 1, 3), 0.3))
    half = prepare_segmentation(torch.rand(2, 3).half(), torch.zeros(2, 3))[0]
    assert half.pred.dtype == torch.float32


def test_matte_reading_and_trimap_region():
    batch = prepare_matting(torch.tensor([[0, 255]], dtype=torch.uint8), torch.tensor([[0.0, 1.0]]),
                            torch.tensor([[0, 128]], dtype=torch.uint8))[0]
    assert batch.pred.dtype == torch.float32 and batch.region.tolist() == [[[False, True]]]
    clamped = prepare_matting(torch.full((1, 3), 0.5), torch.zeros(1, 3), torch.tensor([[0.0, 0.5, 1.0]]),
                              clamp_to_trimap=True)[0]
    assert clamped.pred.tolist() == [[[0.0, 0.5, 1.0]]]


BAD_SEGMENTATION = [
    ("shape mismatch", torch.rand(2, 4, 4), torch.rand(2, 4, 5) > 0.5, ValueError, "same shape"),
    ("wrong ndim", torch.rand(2, 1, 1, 4, 4), torch.rand(2, 1, 1, 4, 4) > 0.5, ValueError, "got 5 dims"),
    ("channel dim", torch.rand(2, 3, 4, 4), torch.rand(2, 3, 4, 4) > 0.5, ValueError, "one channel"),
    ("nan", torch.full((1, 4, 4), float("nan")), torch.zeros(1, 4, 4), ValueError, "NaN"),
    ("inf", torch.full((1, 4, 4), float("inf")), torch.zeros(1, 4, 4), ValueError, "inf"),
    ("logits", torch.randn(1, 4, 4) * 5, torch.zeros(1, 4, 4), ValueError, "sigmoid"),
    ("int32 pred", torch.ones(1, 4, 4, dtype=torch.int32), torch.zeros(1, 4, 4), TypeError, "int32"),
    ("int64 gt", torch.rand(1, 4, 4), torch.ones(1, 4, 4, dtype=torch.int64), TypeError, "`gt`"),
    ("empty batch", torch.rand(0, 4, 4), torch.rand(0, 4, 4), ValueError, "empty batch"),
    ("empty list", [], [], ValueError, "at least one image"),
    ("list length", [torch.rand(4, 4)] * 2, [torch.rand(4, 4)], ValueError, "same length"),
    ("list element shape", [torch.rand(4, 4)], [torch.rand(4, 5)], ValueError, "`pred`[0]"),
    ("tensor vs list", torch.rand(1, 4, 4), [torch.rand(4, 4)], TypeError, "all be tensors"),
    ("not a tensor", [[0.1, 0.2]], [[0.0, 1.0]], TypeError, "must be a torch.Tensor"),
    ("gt out of range", torch.rand(1, 4, 4), torch.full((1, 4, 4), 2.0), ValueError, "`gt` float values"),
]


@pytest.mark.parametrize("case", BAD_SEGMENTATION, ids=[c[0] for c in BAD_SEGMENTATION])
def test_bad_segmentation_input_is_named(case):
    _, pred, gt, error, message = case
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        F.iou_metric(pred, gt)


def test_meta_tensors_are_refused_before_the_device_check():
    # (two real devices need a GPU; the meta device is now refused on its own, before the pair check)
    pred, gt = torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5
    with pytest.raises(ValueError, match=r"`gt` must hold data .* meta device"):
        prepare_segmentation(pred, gt.to("meta"))


def test_bad_trimap_is_named():
    pred, gt = torch.rand(1, 4, 4), torch.rand(1, 4, 4)
    with pytest.raises(ValueError, match="`pred` and `trimap` must have the same shape"):
        F.sad(pred, gt, torch.zeros(1, 4, 5, dtype=torch.uint8))
    with pytest.raises(ValueError, match="`trimap` values"):
        F.sad(pred, gt, torch.full((1, 4, 4), 7, dtype=torch.uint8))
    with pytest.raises(TypeError, match="`trimap`"):
        F.sad(pred, gt, torch.zeros(1, 4, 4, dtype=torch.bool))


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="`empty_gt` must be one of"):
        nm.IoU(empty_gt="nan")
    with pytest.raises(ValueError, match="`reduction`"):
        F.dice(torch.rand(1, 4, 4), torch.rand(1, 4, 4), reduction="sum")
    with pytest.raises(ValueError, match="`threshold` must be <= 1"):
        nm.Dice(threshold=3)


def test_validate_args_false_skips_only_the_syncing_checks():
    logits = torch.randn(1, 4, 4) * 5
    F.mae(logits, torch.zeros(1, 4, 4), validate_args=False)  # range check skipped: no error
    with pytest.raises(ValueError, match="same shape"):
        F.mae(logits, torch.zeros(1, 4, 5), validate_args=False)


def _views(tensor: torch.Tensor) -> dict[str, torch.Tensor]:
    """The same (B, H, W) maps as non-contiguous views: a crop, a transpose, channels-last, a broadcast."""
    b, h, w = tensor.shape
    padded = torch.zeros((b, h + 3, w + 5), dtype=tensor.dtype)
    padded[:, 1:h + 1, 2:w + 2] = tensor
    channels_last = tensor[:, None].contiguous(memory_format=torch.channels_last)
    return {"crop": padded[:, 1:h + 1, 2:w + 2], "transposed": tensor.transpose(1, 2).contiguous().transpose(1, 2),
            "channels_last": channels_last, "every_other_column": torch.repeat_interleave(tensor, 2, dim=2)[:, :, ::2]}


@pytest.mark.parametrize("kind", ["crop", "transposed", "channels_last", "every_other_column"])
def test_strided_views_give_the_values_of_contiguous_maps(kind):
    """Inputs may be views of any strides (crops of a bigger buffer, transposes, channels-last batches):
    every metric of the expensive tier, with and without a trimap, gives the contiguous copies' values."""
    generator = torch.Generator().manual_seed(5)
    pred = torch.randint(0, 256, (2, 23, 31), generator=generator, dtype=torch.uint8)
    gt = ((torch.rand(2, 23, 31, generator=generator) > 0.6) * 255).to(torch.uint8)
    trimap = torch.where(torch.rand(2, 23, 31, generator=generator) > 0.5, 128, 0).to(torch.uint8)
    for inputs in ((pred, gt), (pred.double() / 255, gt > 128)):
        expected = nm.make_collection("expensive", normalize=True)
        expected.update(*inputs, trimap=trimap)
        strided = nm.make_collection("expensive", normalize=True)
        strided.update(*(_views(t)[kind] for t in inputs), trimap=_views(trimap)[kind])
        for name, value in expected.compute().items():
            assert torch.equal(strided.compute()[name], value), (kind, name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.uint8])
@pytest.mark.parametrize("normalize", [False, True])
def test_no_metric_writes_into_its_inputs(dtype, normalize):
    """Several paths work in place on float64 buffers; none may be the caller's tensor (a float64 input is
    not copied by ``.double()``). Every metric of the expensive tier, with a trimap, and the matting
    functions with ``clamp_to_trimap``."""
    generator = torch.Generator().manual_seed(9)
    values = torch.rand(3, 17, 26, generator=generator, dtype=torch.float64) * 0.6 + 0.2
    pred = (values * 255).round().to(torch.uint8) if dtype == torch.uint8 else values.to(dtype)
    gt = (torch.rand(3, 17, 26, generator=generator) > 0.5).to(torch.float64) if dtype != torch.uint8 else \
        ((torch.rand(3, 17, 26, generator=generator) > 0.5) * 255).to(torch.uint8)
    trimap = torch.where(torch.rand(3, 17, 26, generator=generator) > 0.4, 128, 255).to(torch.uint8)
    inputs = {"pred": pred, "gt": gt, "trimap": trimap}
    before = {name: tensor.clone() for name, tensor in inputs.items()}
    collection = nm.make_collection("expensive", normalize=normalize)
    collection.update(pred, gt, trimap=trimap)
    collection.compute()
    for function in (F.sad, F.mse_metric, F.gradient_error, F.connectivity_error):
        function(pred, gt, trimap, clamp_to_trimap=True)
    F.gradient_error(pred, gt, kernel="sobel")
    for name, tensor in inputs.items():
        assert torch.equal(tensor, before[name]), name
