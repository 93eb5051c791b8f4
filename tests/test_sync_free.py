"""Updates never make the host wait for the device, and the device paths give the CPU values, for every catalog entry:
checked on CPU with a dispatch mode that records every op which would synchronise on CUDA (tests/helpers/syncs.py),
on the device paths (``host_reads.free_on`` forced to False, as on CUDA: every op's ``engine="auto"`` takes its
fixed-size form); tests/test_cuda.py repeats it on a GPU. The per-metric device tests keep only what this cannot
cover (stress sets of their own, budgets and overflows, options other than the defaults)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from nobg_metrics.catalog import CATALOG, descriptor
from nobg_metrics.collection import METRIC_NAMES, accepted_options, make_collection, metric_class
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import nearest_feature
from tests.helpers.data import as_tensors, gt_uint8, pred_uint8, sod_pairs
from tests.helpers.syncs import HostSyncRecorder


def _batch(height=40, width=56):
    rng = np.random.default_rng(2)
    gts = [gt_uint8(rng, height, width) for _ in range(3)]
    preds = [pred_uint8(rng, g) for g in gts]
    gt = torch.from_numpy(np.stack(gts))[:, None]
    return torch.from_numpy(np.stack(preds))[:, None], gt, torch.where(gt > 128, 255, 128).to(torch.uint8)


@pytest.fixture
def device_paths(monkeypatch):
    """What CUDA runs: every op that sizes work by the data takes its fixed-size path."""
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)


@pytest.mark.parametrize("name", METRIC_NAMES)
@pytest.mark.parametrize("as_list", [False, True], ids=["tensor", "list"])
def test_update_makes_no_host_sync(name, as_list, device_paths):
    pred, gt, trimap = _batch()
    metric = metric_class(name)(normalize=True, validate_args=False) if "normalize" in accepted_options(
        name) else metric_class(name)(validate_args=False)
    image = torch.randint(0, 256, (pred.shape[0], 3, *pred.shape[-2:]), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(3))  # CCm's RGB images
    if as_list:
        pred, gt, trimap, image = list(pred[:, 0]), list(gt[:, 0]), list(trimap[:, 0]), list(image)
    arguments = {"trimap": trimap} if "trimap" in inspect.signature(metric.update).parameters else {}
    if "image" in inspect.signature(metric.update).parameters:
        arguments["image"] = image
    metric.update(pred, gt, **arguments)  # warm-up: lazily built constants may be made once
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, **arguments)
    assert not recorder.hits, recorder.hits


def test_distance_transform_makes_no_host_sync(device_paths):
    features = torch.rand(2, 33, 70, generator=torch.Generator().manual_seed(0)) > 0.9
    with HostSyncRecorder() as recorder:
        nearest_feature(features)
    assert not recorder.hits, recorder.hits


def test_the_recorder_sees_the_host_reads_of_the_cpu_paths():
    """The check is not vacuous: on CPU the connectivity error lists runs with ``nonzero`` and solves its
    union-find to convergence (free there); the recorder reports those reads."""
    pred, gt, trimap = _batch()
    metric = metric_class("connectivity_error")(validate_args=False)
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, trimap=trimap)
    assert {op for op, _ in recorder.hits} >= {"nonzero", "_local_scalar_dense"}


STRESS_SHAPES = [(37, 53), (17, 1), (2, 3), (33, 70), (96, 130)]
"""The stress batch: every gt kind (blobs with grey edges, empty, full, thin lines) and prediction kind
(tests/helpers/data.py) at a non-square, a one-pixel-wide, a tiny, an elongated and a larger size (where the CPU
paths' crops to boxes matter), as one list of five equal-size groups."""

HCE_SHAPES = [(17, 1), (2, 3), (37, 53)]
"""HCE's forced sync-free path is ~100x its CPU path on CPU: its stress batch drops the largest group."""


def _stress_batch(shapes: list[tuple[int, int]], degenerate: bool = True) -> tuple[list[torch.Tensor], ...]:
    """``(preds, gts, trimaps, images)``: uint8 lists; trimaps all-unknown, without unknown pixels, or known fg / bg
    with an unknown band; CCm's RGB images with the object lighter than its surroundings. Without ``degenerate``,
    the images whose gt is empty or full are left out."""
    preds, gts = as_tensors(sod_pairs(seed=21, shapes=shapes))
    generator = torch.Generator().manual_seed(4)
    trimaps, images = [], []
    for index, gt in enumerate(gts):
        trimap = torch.where(gt > 128, 255, 0).to(torch.uint8)
        if index % 5 == 1:
            trimap[:] = 128
        elif index % 5 != 2:
            trimap[gt.shape[0] // 4:gt.shape[0] // 2 + 1] = 128
        trimaps.append(trimap)
        image = torch.randint(0, 200, (3, *gt.shape), dtype=torch.uint8, generator=generator)
        images.append(torch.where(gt > 128, image // 4 + 150, image).to(torch.uint8))
    kept = [degenerate or bool((gt > 128).any() and not (gt > 128).all()) for gt in gts]
    return tuple([x for x, keep in zip(part, kept) if keep] for part in (preds, gts, trimaps, images))


def _units() -> list[list[str]]:
    """The catalog's map entries as units scored together: the entries of one compute group (they share one
    statistics pass), every other entry on its own."""
    units: dict[str, list[str]] = {}
    for name, entry in CATALOG.items():
        if entry.kind != "maps":  # the structured-input classes take no pred / gt maps: tested in their folders
            continue
        units.setdefault(entry.statistic or name, []).append(name)
    return list(units.values())


@pytest.mark.parametrize("normalize", [True, pytest.param(False, marks=pytest.mark.slow)])
@pytest.mark.parametrize("names", _units(), ids=lambda names: names[0] if len(names) == 1 else f"{names[0]}-group")
def test_the_device_paths_give_the_cpu_values(names, normalize, monkeypatch):
    """Off CPU, ops that size work by the data take their fixed-size forms (``engine="auto"`` resolves to
    ``"fixed"``). Forced here on CPU, every catalog entry gives its CPU value on the stress batch, to 1e-12 (measured:
    bit for bit); an entry whose value is NaN there (a reference policy that gives an empty gt NaN) is compared on
    the batch without its empty and full gts as well."""
    shapes = HCE_SHAPES if "hce" in names or "birefnet_hce" in names else STRESS_SHAPES
    options = {"normalize": normalize} if any("normalize" in descriptor(n).options for n in names) else {}

    def values(degenerate: bool) -> dict[str, torch.Tensor]:
        preds, gts, trimaps, images = _stress_batch(shapes, degenerate)
        inputs = {key: value for key, value in (("trimap", trimaps), ("image", images))
                  if any(key in descriptor(n).inputs for n in names)}
        collection = make_collection(metrics=names, **options)
        collection.update(preds, gts, **inputs)
        return collection.compute()

    host = values(True)
    nan = [name for name, value in host.items() if value.isnan().any()]
    host_ordinary = values(False) if nan else {}
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    for expected, got in ((host, values(True)), (host_ordinary, values(False) if nan else {})):
        for name, value in expected.items():
            both_nan = bool(value.isnan().all() and got[name].isnan().all())
            assert both_nan or (got[name] - value).abs().max().item() <= 1e-12, name
    assert not any(host_ordinary[name].isnan().any() for name in nan), nan  # compared on numbers, not NaN
