"""CUDA readiness (skipped without a GPU): every metric of the expensive tier updates on CUDA with no
host synchronisation (``torch.cuda.set_sync_debug_mode("error")``) and gives the CPU value."""

from __future__ import annotations

import pytest
import torch

import nobg_metrics as nm

pytestmark = pytest.mark.cuda

KNOWN_SYNCS = {"connectivity_error"}
"""Exact connected components check convergence (and compact the run graph with ``nonzero``) on the
host: O(log n) syncs per labelling, documented in docs/connected_components.md. Open work (issue 9)."""


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
            if "trimap" in metric._update_signature.parameters:
                metric.update(pred, gt, trimap=trimap)
            else:
                metric.update(pred, gt)
        except RuntimeError as error:
            if name not in KNOWN_SYNCS:
                offenders.append(f"{name}: {error}")
            torch.cuda.set_sync_debug_mode("default")
            metric.reset()
            if "trimap" in metric._update_signature.parameters:
                metric.update(pred, gt, trimap=trimap)
            else:
                metric.update(pred, gt)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not offenders, "\n".join(offenders)
    for name, metric in gpu.items():
        assert abs(metric.compute().item() - expected[name].item()) <= 1e-6, name
