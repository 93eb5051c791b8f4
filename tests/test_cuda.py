"""CUDA readiness (skipped without a GPU): every metric of the expensive tier updates on CUDA with no
host synchronisation (``torch.cuda.set_sync_debug_mode("error")``) and gives the CPU value."""

from __future__ import annotations

import inspect
import traceback

import pytest
import torch

import nobg_metrics as nm

pytestmark = pytest.mark.cuda


def _where(error: BaseException) -> str:
    """The innermost nobg_metrics frames of an exception (where the sync happened)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "nobg_metrics" in f.filename]
    return " <- ".join(f"{f.filename.split('nobg_metrics/')[-1]}:{f.lineno}" for f in frames[::-1][:3])


def batch(device: str, dtype=torch.uint8):
    generator = torch.Generator().manual_seed(0)
    gt = (torch.rand(4, 1, 64, 80, generator=generator) > 0.5).to(torch.uint8) * 255
    pred = (torch.rand(4, 1, 64, 80, generator=generator) * 255).to(torch.uint8)
    trimap = torch.full_like(gt, 128)
    return pred.to(device), gt.to(device), trimap.to(device)


def test_updates_do_not_sync_and_match_cpu():
    cpu = nm.make_collection("expensive", normalize=True)
    cpu.update(*batch("cpu")[:2], trimap=batch("cpu")[2])
    expected = cpu.compute()
    gpu = nm.make_collection("expensive", normalize=True, validate_args=False).to("cuda")
    pred, gt, trimap = batch("cuda")
    torch.cuda.synchronize()
    offenders = []
    for name, metric in gpu.items():
        torch.cuda.set_sync_debug_mode("error")
        try:
            if "trimap" in inspect.signature(metric.update).parameters:
                metric.update(pred, gt, trimap=trimap)
            else:
                metric.update(pred, gt)
        except RuntimeError as error:
            offenders.append(f"{name}: {error} at {_where(error)}")
            torch.cuda.set_sync_debug_mode("default")
            metric.reset()
            if "trimap" in inspect.signature(metric.update).parameters:
                metric.update(pred, gt, trimap=trimap)
            else:
                metric.update(pred, gt)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not offenders, "\n".join(offenders)
    for name, metric in gpu.items():
        assert abs(metric.compute().item() - expected[name].item()) <= 1e-6, name


def _update(metric, pred, gt, trimap):
    if "trimap" in inspect.signature(metric.update).parameters:
        metric.update(pred, gt, trimap=trimap)
    else:
        metric.update(pred, gt)


@pytest.mark.parametrize("normalize", [True, False])
def test_every_metric_on_cuda_equals_cpu_on_the_sweep_shapes(normalize):
    """Mixed sizes (a list), odd/non-square/1xN shapes, empty and full gts: CUDA == CPU to 1e-9."""
    from tests.helpers.data import SHAPES, as_tensors, sod_pairs

    preds, gts = as_tensors(sod_pairs(seed=11, shapes=[*SHAPES, (257, 383)]))
    trimaps = [torch.where(g > 128, 255, 128).to(torch.uint8) for g in gts]
    cpu = nm.make_collection("expensive", normalize=normalize)
    gpu = nm.make_collection("expensive", normalize=normalize).to("cuda")
    for metric in cpu.values():
        _update(metric, preds, gts, trimaps)
    for metric in gpu.values():
        _update(metric, [p.cuda() for p in preds], [g.cuda() for g in gts], [t.cuda() for t in trimaps])
    expected, got = cpu.compute(), gpu.compute()
    for name in expected:
        assert abs(got[name].item() - expected[name].item()) <= 1e-9, name


def test_equal_size_batch_on_cuda_is_sync_free_and_exact():
    """A batch of 1024x768 realistic uint8 maps (the batched path), every metric, CUDA == CPU."""
    import numpy as np

    from tests.helpers.data import gt_uint8, pred_uint8

    rng = np.random.default_rng(5)
    gts = [gt_uint8(rng, 1024, 768) for _ in range(4)]
    preds = [pred_uint8(rng, g) for g in gts]
    pred = torch.from_numpy(np.stack(preds))[:, None]
    gt = torch.from_numpy(np.stack(gts))[:, None]
    trimap = torch.where(gt > 128, 255, 128).to(torch.uint8)
    cpu = nm.make_collection("expensive", normalize=True)
    for metric in cpu.values():
        _update(metric, pred, gt, trimap)
    gpu = nm.make_collection("expensive", normalize=True, validate_args=False).to("cuda")
    pred, gt, trimap = pred.cuda(), gt.cuda(), trimap.cuda()
    torch.cuda.synchronize()
    offenders = []
    for name, metric in gpu.items():
        torch.cuda.set_sync_debug_mode("error")
        try:
            _update(metric, pred, gt, trimap)
        except RuntimeError as error:
            offenders.append(f"{name}: {error} at {_where(error)}")
            torch.cuda.set_sync_debug_mode("default")
            metric.reset()
            _update(metric, pred, gt, trimap)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not offenders, "\n".join(offenders)
    expected, got = cpu.compute(), gpu.compute()
    for name in expected:
        assert abs(got[name].item() - expected[name].item()) <= 1e-9, name


def test_distance_transform_on_cuda_equals_cpu():
    from nobg_metrics.ops.distance import nearest_feature

    generator = torch.Generator().manual_seed(3)
    for shape in [(3, 1, 17), (2, 33, 70), (2, 1024, 768), (1, 5, 1)]:
        features = torch.rand(shape, generator=generator) > 0.999
        features[0] = False
        cpu = nearest_feature(features)
        gpu = nearest_feature(features.cuda())
        for a, b in zip(cpu, gpu):
            assert torch.equal(a, b.cpu()), shape


def test_uint8_levels_divide_exactly_on_cuda():
    """CUDA multiplies by the reciprocal of a host scalar; our /255 must round as IEEE division (as numpy)."""
    from nobg_metrics.ops.arith import divide

    levels = torch.arange(256, dtype=torch.float32)
    assert torch.equal(divide(levels.cuda(), 255).cpu(), levels / 255)
    assert torch.equal(divide(levels.double().cuda(), 255).cpu(), levels.double() / 255)


def test_connectivity_with_host_syncs_allowed_equals_cpu():
    """``allow_host_sync=True`` (what the command uses) labels by the data on CUDA: the same values."""
    from tests.helpers.data import SHAPES, as_tensors, sod_pairs

    preds, gts = as_tensors(sod_pairs(seed=12, shapes=[*SHAPES, (257, 383)]))
    trimaps = [torch.where(g > 128, 255, 128).to(torch.uint8) for g in gts]
    cpu = nm.ConnectivityError()
    cpu.update(preds, gts, trimaps)
    gpu = nm.ConnectivityError(allow_host_sync=True).to("cuda")
    gpu.update([p.cuda() for p in preds], [g.cuda() for g in gts], [t.cuda() for t in trimaps])
    assert abs(gpu.compute().item() - cpu.compute().item()) <= 1e-9


def test_camouflage_context_measure_on_cuda_is_sync_free_and_equals_cpu():
    """CCm's fixed-size search (the default off CPU) makes no host sync in update and gives the CPU value."""
    pred, gt, _ = batch("cpu")
    generator = torch.Generator().manual_seed(4)
    image = (torch.rand(pred.shape[0], 3, *pred.shape[-2:], generator=generator) * 255).to(torch.uint8)
    cpu = nm.CamouflageContextMeasure(normalize=True)
    cpu.update(pred, gt, image)
    gpu = nm.CamouflageContextMeasure(normalize=True, validate_args=False).to("cuda")
    pred, gt, image = pred.cuda(), gt.cuda(), image.cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        gpu.update(pred, gt, image)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert abs(gpu.compute().item() - cpu.compute().item()) <= 1e-9
